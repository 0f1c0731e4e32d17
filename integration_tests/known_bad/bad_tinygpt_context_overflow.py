"""Context overflow accepted after a cache: the budget check counts the new tokens, not past + new.

A cached call that runs past context_length is not rejected with a ValueError; it goes on
to index learned positions that do not exist.
"""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "TINY_GPT_MODULE"
EXPECTED_OWNER = "cache_validation"

model = mutated_module(
    "tinygpt.model", [("check_context_length(past_length + T,", "check_context_length(T,")]
)
globals().update(export_with("tinygpt", model))
