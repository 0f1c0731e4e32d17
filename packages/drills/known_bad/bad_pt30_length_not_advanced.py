"""The sampled token is written and recorded as the last token, but the row's length is never
advanced: the next step overwrites it."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_PT30_MODULE"
EXPECTED_OWNER = "pt30"

pt30 = mutated_module("gptlab_drills.pt30", [("    lengths[rows] += 1\n", "")])
globals().update(export_with("gptlab_drills.pt30", pt30))
