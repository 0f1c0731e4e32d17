"""The slot at index `length` (the first one past the row's context) takes part in attention."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_P19_MODULE"
EXPECTED_OWNER = "p19"

p19 = mutated_module(
    "gptlab_drills.p19",
    [("slots[None, :] >= lengths[:, None]", "slots[None, :] > lengths[:, None]")],
)
globals().update(export_with("gptlab_drills.p19", p19))
