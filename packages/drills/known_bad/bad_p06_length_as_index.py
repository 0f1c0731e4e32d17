"""The length itself is used as the index (off by one): the slot after the last valid token."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_P06_MODULE"
EXPECTED_OWNER = "p06"

p06 = mutated_module(
    "gptlab_drills.p06", [("hidden[rows, lengths.long() - 1]", "hidden[rows, lengths.long()]")]
)
globals().update(export_with("gptlab_drills.p06", p06))
