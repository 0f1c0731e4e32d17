"""Attention scores scaled by 1/D instead of 1/sqrt(D)."""

from __future__ import annotations

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "MODERN_LM_MODULE"
EXPECTED_OWNER = "modern_attention"
CLAUSE = "M02.29"

attention = mutated_module(
    "modern_lm.attention",
    [("is_causal=True,", "is_causal=True,\n            scale=1.0 / self.head_dim,")],
)
model = mutated_module(
    "modern_lm.model", rebind={"GroupedQueryAttention": attention.GroupedQueryAttention}
)
globals().update(export_with("modern_lm", model))
