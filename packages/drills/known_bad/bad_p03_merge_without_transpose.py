"""merge_heads flattens [B, H, T, D] to [B, T, H*D] without first moving the head axis back."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_P03_MODULE"
EXPECTED_OWNER = "p03"

p03 = mutated_module(
    "gptlab_drills.p03",
    [("x.transpose(1, 2).reshape(B, T, H * D).contiguous()", "x.reshape(B, T, H * D)")],
)
globals().update(export_with("gptlab_drills.p03", p03))
