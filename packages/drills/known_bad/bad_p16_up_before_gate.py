"""The fused projection's halves are read in the wrong order: silu is applied to the up half."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_P16_MODULE"
EXPECTED_OWNER = "p16"

p16 = mutated_module(
    "gptlab_drills.p16", [("gate, up = self.gate_up_proj", "up, gate = self.gate_up_proj")]
)
globals().update(export_with("gptlab_drills.p16", p16))
