"""key_valid is checked but never applied: padding keys are attended by position alone."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_PT17_MODULE"
EXPECTED_OWNER = "pt17"

pt17 = mutated_module(
    "gptlab_drills.pt17", [("(not_after & key_valid[:, None, :])[:, None]", "not_after[:, None]")]
)
globals().update(export_with("gptlab_drills.pt17", pt17))
