"""The maxima are scattered onto zeros that take part in the max: a segment whose values are
all negative reports 0, as an empty one does."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_PT03_MODULE"
EXPECTED_OWNER = "pt03"

pt03 = mutated_module(
    "gptlab_drills.pt03",
    [('values, "amax", include_self=False', 'values, "amax", include_self=True')],
)
globals().update(export_with("gptlab_drills.pt03", pt03))
