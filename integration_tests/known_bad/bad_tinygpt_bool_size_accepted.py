"""GPTConfig takes a bool for a size: isinstance(True, int) holds, so n_layers=True is 1 layer."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "TINY_GPT_MODULE"
EXPECTED_OWNER = "config_validation"

config = mutated_module(
    "tinygpt.config",
    [("isinstance(value, bool) or not isinstance(value, int)", "not isinstance(value, int)")],
)
globals().update(export_with("tinygpt", config))
