"""Every row is rotated at row 0's positions."""

from __future__ import annotations

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "MODERN_LM_MODULE"
EXPECTED_OWNER = "modern_rope"
CLAUSE = "M02.27"

model = mutated_module(
    "modern_lm.model",
    [
        (
            "cos, sin = self.rotary_emb(positions, x.dtype)",
            "cos, sin = self.rotary_emb(positions[:1].expand_as(positions), x.dtype)",
        )
    ],
)
globals().update(export_with("modern_lm", model))
