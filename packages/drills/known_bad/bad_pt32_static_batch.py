"""Exported without dynamic_shapes: the program is specialised to the example's B = 2 and
refuses every other batch size."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_PT32_MODULE"
EXPECTED_OWNER = "pt32"

pt32 = mutated_module(
    "gptlab_drills.pt32",
    [(", examples, dynamic_shapes=shapes)", ", examples)")],
)
globals().update(export_with("gptlab_drills.pt32", pt32))
