"""Token ids are never range-checked: an id past the vocabulary reaches scatter_ and fails
there with an IndexError-like RuntimeError instead of a ValueError naming history."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_P13_MODULE"
EXPECTED_OWNER = "p13"

p13 = mutated_module(
    "gptlab_drills.p13",
    [("bad = ((history < 0) | (history >= V)).nonzero()", "bad = history[:0]")],
)
globals().update(export_with("gptlab_drills.p13", p13))
