"""The mean of squares is taken in x's own dtype: in fp16 the squares of values near 3e4
overflow to inf (every output 0) and those near 3e-4 underflow (the variance is lost)."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_PT12_MODULE"
EXPECTED_OWNER = "pt12"

pt12 = mutated_module(
    "gptlab_drills.pt12",
    [("        wide = x.float()\n", "        wide = x\n")],
)
globals().update(export_with("gptlab_drills.pt12", pt12))
