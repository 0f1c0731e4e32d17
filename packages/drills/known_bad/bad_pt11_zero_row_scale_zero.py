"""An all-zero row keeps the scale absmax / 127 = 0: the division gives NaN, and the row's
scale is not positive (a later dequant of 0 * 0 hides it, a requantize does not)."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_PT11_MODULE"
EXPECTED_OWNER = "pt11"

pt11 = mutated_module(
    "gptlab_drills.pt11",
    [
        (
            "    scales = torch.where(amax > 0, tight, torch.ones_like(amax))",
            "    scales = amax / QMAX",
        )
    ],
)
globals().update(export_with("gptlab_drills.pt11", pt11))
