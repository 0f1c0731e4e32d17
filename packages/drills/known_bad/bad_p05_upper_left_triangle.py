"""The causal triangle is anchored at the top left (query i sees keys 0..i), so a decode
query or a chunk after earlier tokens loses the keys before it."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_P05_MODULE"
EXPECTED_OWNER = "p05"

p05 = mutated_module(
    "gptlab_drills.p05", [("torch.arange(S - L, S, device", "torch.arange(0, L, device")]
)
globals().update(export_with("gptlab_drills.p05", p05))
