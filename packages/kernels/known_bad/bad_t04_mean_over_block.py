"""The mean of squares divides by the padded block width, not by H: every row whose H is not
a power of two is scaled too large."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_T04_MODULE"
EXPECTED_OWNER = "t04"

t04 = mutated_module(
    "gptlab_kernels.t04",
    [("tl.sum(h * h, axis=0) / H + eps", "tl.sum(h * h, axis=0) / BLOCK + eps")],
)
globals().update(export_with("gptlab_kernels.t04", t04))
