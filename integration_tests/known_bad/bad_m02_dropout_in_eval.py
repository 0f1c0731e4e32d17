"""Attention dropout stays on in eval mode."""

from __future__ import annotations

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "MODERN_LM_MODULE"
EXPECTED_OWNER = "modern_decoder"
CLAUSE = "M02.32"

attention = mutated_module(
    "modern_lm.attention",
    [("dropout_p=self.dropout if self.training else 0.0,", "dropout_p=self.dropout,")],
)
model = mutated_module(
    "modern_lm.model", rebind={"GroupedQueryAttention": attention.GroupedQueryAttention}
)
globals().update(export_with("modern_lm", model))
