"""After a rejection the sequence is rolled back but neither model's cache is truncated."""

from gptlab_testkit.mutants import export_with, mutated_module
from speculative import DecodeState

VARIABLE = "SPECULATIVE_DECODING_MODULE"
EXPECTED_OWNER = "speculative_rollback"


class StaleCacheState(DecodeState):
    def rollback(self, length):
        # mistake: the bookkeeping moves back, the K/V and cache_lengths keep the rejected tokens
        self.length = length
        self.next_logits = None


generate = mutated_module("speculative.generate", rebind={"DecodeState": StaleCacheState})
globals().update(export_with("speculative", generate))
