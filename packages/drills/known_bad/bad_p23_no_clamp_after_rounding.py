"""No clamp after rounding: a value half a step past the top rounds to 256 and wraps to 0."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_P23_MODULE"
EXPECTED_OWNER = "p23"

p23 = mutated_module(
    "gptlab_drills.p23",
    [
        (
            "(torch.round(xf / scale) + zero_point).clamp(QMIN, QMAX)",
            "(torch.round(xf / scale) + zero_point)",
        )
    ],
)
globals().update(export_with("gptlab_drills.p23", p23))
