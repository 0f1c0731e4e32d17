"""h stays in the stream's dtype for the squares: fp16 activations near 300 square past 65504
to inf, the scale becomes 0 and the row comes out 0."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_T04_MODULE"
EXPECTED_OWNER = "t04"

t04 = mutated_module("gptlab_kernels.t04", [("    h = h.to(tl.float32)\n", "")])
globals().update(export_with("gptlab_kernels.t04", t04))
