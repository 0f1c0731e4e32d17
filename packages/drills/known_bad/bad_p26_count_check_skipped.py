"""The per-request count check is left out: a short or long request fails deep inside the
indexed write (or silently broadcasts a single row)."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_P26_MODULE"
EXPECTED_OWNER = "p26"

p26 = mutated_module(
    "gptlab_drills.p26", [("        if rows.shape[0] != count:\n", "        if False:\n")]
)
globals().update(export_with("gptlab_drills.p26", p26))
