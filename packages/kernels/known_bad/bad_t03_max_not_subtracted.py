"""exp runs on the raw row: the row max is not subtracted, so rows near +1000 overflow to NaN."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_T03_MODULE"
EXPECTED_OWNER = "t03"

t03 = mutated_module("gptlab_kernels.t03", [("shifted = x - tl.max(x, axis=0)", "shifted = x")])
globals().update(export_with("gptlab_kernels.t03", t03))
