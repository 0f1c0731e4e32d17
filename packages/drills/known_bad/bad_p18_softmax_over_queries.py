"""The softmax normalises over the query axis (dim=-2) instead of the key axis."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_P18_MODULE"
EXPECTED_OWNER = "p18"

p18 = mutated_module(
    "gptlab_drills.p18", [("torch.softmax(scores, dim=-1)", "torch.softmax(scores, dim=-2)")]
)
globals().update(export_with("gptlab_drills.p18", p18))
