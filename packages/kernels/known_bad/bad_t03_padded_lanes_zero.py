"""The padded lanes load 0, not -inf: they count in the max and add exp(-max) each to the sum."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_T03_MODULE"
EXPECTED_OWNER = "t03"

t03 = mutated_module(
    "gptlab_kernels.t03", [('mask=inside, other=-float("inf"))', "mask=inside, other=0.0)")]
)
globals().update(export_with("gptlab_kernels.t03", t03))
