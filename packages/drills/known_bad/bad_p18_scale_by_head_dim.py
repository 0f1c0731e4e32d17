"""The default scale divides the scores by D instead of sqrt(D)."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_P18_MODULE"
EXPECTED_OWNER = "p18"

p18 = mutated_module(
    "gptlab_drills.p18", [("D**-0.5 if scale is None", "D**-1.0 if scale is None")]
)
globals().update(export_with("gptlab_drills.p18", p18))
