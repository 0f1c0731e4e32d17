"""The mask's polarity is flipped: True is read as "forbidden"."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_P07_MODULE"
EXPECTED_OWNER = "p07"

p07 = mutated_module(
    "gptlab_drills.p07",
    [("logits.masked_fill(~allowed,", "logits.masked_fill(allowed,")],
)
globals().update(export_with("gptlab_drills.p07", p07))
