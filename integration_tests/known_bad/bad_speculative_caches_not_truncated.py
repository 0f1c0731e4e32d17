"""After a rejection the sequence is rolled back but neither model's cache is truncated."""

import types

import torch

from speculative import DecodeState
from speculative import generate as reference

VARIABLE = "SPECULATIVE_DECODING_MODULE"
EXPECTED_OWNER = "speculative_rollback"

__all__ = ["speculative_generate"]


class StaleCacheState(DecodeState):
    def rollback(self, length):
        # mistake: the bookkeeping moves back, the K/V and cache_lengths keep the rejected tokens
        self.length = length
        self.next_logits = None


def _with_globals(function, **replacements):
    return types.FunctionType(function.__code__, {**vars(reference), **replacements})


_open_states = _with_globals(reference._open_states, DecodeState=StaleCacheState)
_loop = _with_globals(reference._draft_and_verify, _open_states=_open_states)


def speculative_generate(
    target, draft, input_ids, positions, max_new_tokens, num_speculative_tokens, eos_token_id=None
):
    with torch.no_grad():
        return _loop(
            target,
            draft,
            input_ids,
            positions,
            max_new_tokens,
            num_speculative_tokens,
            eos_token_id,
            reference.GreedyPolicy(),
        )
