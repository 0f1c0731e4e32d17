"""The window's lower edge is inclusive, p - window <= kpos: every query sees window + 1
keys."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_PT19_MODULE"
EXPECTED_OWNER = "pt19"

pt19 = mutated_module(
    "gptlab_drills.pt19",
    [("(kpos > qpos - window)", "(kpos >= qpos - window)")],
)
globals().update(export_with("gptlab_drills.pt19", pt19))
