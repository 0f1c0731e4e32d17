"""Repeated positions within a row are not rejected: the last scatter_ to land wins."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_P20_MODULE"
EXPECTED_OWNER = "p20"

p20 = mutated_module("gptlab_drills.p20", [("    if repeated:\n", "    if repeated and False:\n")])
globals().update(export_with("gptlab_drills.p20", p20))
