"""The comparison drops the k-th largest itself (`<=` for `<`): k - 1 tokens survive."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_P09_MODULE"
EXPECTED_OWNER = "p09"

p09 = mutated_module("gptlab_drills.p09", [("logits < kth", "logits <= kth")])
globals().update(export_with("gptlab_drills.p09", p09))
