"""The flat index is decoded with the beam width instead of the vocabulary size."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_P12_MODULE"
EXPECTED_OWNER = "p12"

p12 = mutated_module("gptlab_drills.p12", [("flat % V, flat // V", "flat % K, flat // K")])
globals().update(export_with("gptlab_drills.p12", p12))
