"""x's strides are passed swapped: rows step by stride(1), columns by stride(0)."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_T02_MODULE"
EXPECTED_OWNER = "t02"

t02 = mutated_module(
    "gptlab_kernels.t02",
    [("x.stride(0), x.stride(1), b.stride(0)", "x.stride(1), x.stride(0), b.stride(0)")],
)
globals().update(export_with("gptlab_kernels.t02", t02))
