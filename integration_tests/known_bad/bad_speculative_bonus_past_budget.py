"""The bonus token is appended after every fully accepted round, even with no budget left."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "SPECULATIVE_DECODING_MODULE"
EXPECTED_OWNER = "speculative_accounting"

# mistake: the remaining budget is never checked
bonus = ("return accepted < remaining and eos_token_id not in", "return eos_token_id not in")
globals().update(export_with("speculative", mutated_module("speculative.generate", [bonus])))
