"""At the first mismatch the rejected draft token is committed instead of the target's token."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "SPECULATIVE_DECODING_MODULE"
EXPECTED_OWNER = "speculative_rollback"

draft_token = ("return index, int(choices[index])", "return index, proposal.token")
generate = mutated_module("speculative.generate", [draft_token], within="GreedyPolicy.verify")
globals().update(export_with("speculative", generate))
