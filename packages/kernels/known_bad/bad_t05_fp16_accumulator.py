"""The accumulator is kept in the operands' dtype: fp16 partial sums past 65504 overflow, and
each K slice rounds the running sum to fp16."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_T05_MODULE"
EXPECTED_OWNER = "t05"

t05 = mutated_module(
    "gptlab_kernels.t05",
    [
        (
            'acc += tl.dot(a, b, input_precision="ieee")',
            'acc = (acc + tl.dot(a, b, input_precision="ieee")).to(a_ptr.dtype.element_ty)'
            ".to(tl.float32)",
        )
    ],
)
globals().update(export_with("gptlab_kernels.t05", t05))
