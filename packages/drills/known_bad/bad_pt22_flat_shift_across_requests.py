"""The shift runs over the whole flat batch: only row 0 gets the sentinel, and each later
request's first token is scored with the last row of the request before it."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_PT22_MODULE"
EXPECTED_OWNER = "pt22"

pt22 = mutated_module(
    "gptlab_drills.pt22",
    [("    first[starts[ends > starts]] = True", "    first[:1] = True")],
)
globals().update(export_with("gptlab_drills.pt22", pt22))
