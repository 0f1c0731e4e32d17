"""The fused rows go Q, V, K: V's block lands where K's belongs (a swap no shape check sees
when K and V have as many rows)."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_PT09_MODULE"
EXPECTED_OWNER = "pt09"

pt09 = mutated_module(
    "gptlab_drills.pt09",
    [('PARTS = ("q_proj", "k_proj", "v_proj")', 'PARTS = ("q_proj", "v_proj", "k_proj")')],
)
globals().update(export_with("gptlab_drills.pt09", pt09))
