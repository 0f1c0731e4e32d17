"""The loads are masked by the row's length but the scores are not: the slots past it in the
last chunk score 0 and add exp(0 - max) to the softmax's sum."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_T07_MODULE"
EXPECTED_OWNER = "t07"

t07 = mutated_module(
    "gptlab_kernels.t07", [('        s = tl.where(valid[None, :], s, -float("inf"))\n', "")]
)
globals().update(export_with("gptlab_kernels.t07", t07))
