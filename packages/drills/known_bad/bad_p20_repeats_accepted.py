"""Repeated positions within a row are not rejected: the last scatter_ to land wins.

The kit allows that (repeats defined or rejected); it breaks this project's extension
P20.14 (the reference rejects them), so it is graded on extension tests too."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_P20_MODULE"
EXPECTED_OWNER = "p20"
SCOPE = "all"

p20 = mutated_module("gptlab_drills.p20", [("    if repeated:\n", "    if repeated and False:\n")])
globals().update(export_with("gptlab_drills.p20", p20))
