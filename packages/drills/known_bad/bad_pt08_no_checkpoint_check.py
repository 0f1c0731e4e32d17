"""The repair ties the Parameters but loads any checkpoint: an untied one silently keeps
whichever of its two matrices torch copied last."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_PT08_MODULE"
EXPECTED_OWNER = "pt08"

pt08 = mutated_module(
    "gptlab_drills.pt08", [("            if not same:\n", "            if False:\n")]
)
globals().update(export_with("gptlab_drills.pt08", pt08))
