"""The scale divides the absmax by 255 (the full int8 range) as for an unsigned or affine
code: half the values overflow 127 and are clamped, far outside half a scale."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_PT11_MODULE"
EXPECTED_OWNER = "pt11"

pt11 = mutated_module(
    "gptlab_drills.pt11",
    [("    tight = (amax / QMAX).clamp_min", "    tight = (amax / 255).clamp_min")],
)
globals().update(export_with("gptlab_drills.pt11", pt11))
