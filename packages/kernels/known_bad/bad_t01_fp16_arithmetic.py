"""a * x is rounded to the inputs' dtype before the add (two roundings; past 65504 it overflows fp16).

fp32 arithmetic for half inputs is this project's rule (T01.6), so it is graded on
extension tests too."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_T01_MODULE"
EXPECTED_OWNER = "t01"
SCOPE = "all"

t01 = mutated_module(
    "gptlab_kernels.t01",
    [
        ("z = a * x + y", "z = (a * x).to(x_ptr.dtype.element_ty).to(tl.float32) + y"),
    ],
)
globals().update(export_with("gptlab_kernels.t01", t01))
