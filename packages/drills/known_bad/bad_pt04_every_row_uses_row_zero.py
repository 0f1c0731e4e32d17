"""Every row gathers the first row's indices, as x[:, indices[0]] would."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_PT04_MODULE"
EXPECTED_OWNER = "pt04"

pt04 = mutated_module(
    "gptlab_drills.pt04",
    [("    return x[rows, indices.long()]", "    return x[rows, indices.long()[:1]]")],
)
globals().update(export_with("gptlab_drills.pt04", pt04))
