"""q is x / scale truncated toward zero by the int8 cast, not rounded to nearest: most
elements land one level low, up to a whole step from x."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_T06_MODULE"
EXPECTED_OWNER = "t06"

t06 = mutated_module(
    "gptlab_kernels.t06", [("q = (x / scale + ROUNDER) - ROUNDER", "q = x / scale")]
)
globals().update(export_with("gptlab_kernels.t06", t06))
