"""The loads and the store carry no mask: the last block reads past x and y and writes past out."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_T01_MODULE"
EXPECTED_OWNER = "t01"

t01 = mutated_module(
    "gptlab_kernels.t01",
    [
        (
            "x = tl.load(x_ptr + offsets * x_stride, mask=inside, other=0.0)",
            "x = tl.load(x_ptr + offsets * x_stride)",
        ),
        (
            "y = tl.load(y_ptr + offsets * y_stride, mask=inside, other=0.0)",
            "y = tl.load(y_ptr + offsets * y_stride)",
        ),
        ("z.to(out_ptr.dtype.element_ty), mask=inside)", "z.to(out_ptr.dtype.element_ty))"),
    ],
)
globals().update(export_with("gptlab_kernels.t01", t01))
