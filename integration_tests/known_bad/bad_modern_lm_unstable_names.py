"""The decoder stack registered as `blocks`, not Llama's `layers`: every checkpoint path moves."""

from __future__ import annotations

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "MODERN_LM_MODULE"
EXPECTED_OWNER = "modern_checkpoint"

model = mutated_module(
    "modern_lm.model",
    [
        ("self.layers = nn.ModuleList(", "self.blocks = nn.ModuleList("),
        ("for layer in self.layers:", "for layer in self.blocks:"),
    ],
)
globals().update(export_with("modern_lm", model))
