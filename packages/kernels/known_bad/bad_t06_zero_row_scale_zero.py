"""No policy for an all-zero row: its scale is 0 / 127 = 0, and q = 0 / 0 is NaN cast to int8."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_T06_MODULE"
EXPECTED_OWNER = "t06"

t06 = mutated_module(
    "gptlab_kernels.t06",
    [("scale = tl.where(amax > 0, amax / 127.0, 1.0)", "scale = amax / 127.0")],
)
globals().update(export_with("gptlab_kernels.t06", t06))
