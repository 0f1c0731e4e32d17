"""One threshold for the whole batch (the smallest row's k-th largest): rows interact."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_P09_MODULE"
EXPECTED_OWNER = "p09"

p09 = mutated_module("gptlab_drills.p09", [(".values[..., -1:]", ".values[..., -1:].min()")])
globals().update(export_with("gptlab_drills.p09", p09))
