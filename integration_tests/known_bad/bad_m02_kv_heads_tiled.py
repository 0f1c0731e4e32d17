"""K/V heads tiled with repeat: query head h reads kv head h % K, not h // (H / K)."""

from __future__ import annotations

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "MODERN_LM_MODULE"
EXPECTED_OWNER = "modern_gqa"
CLAUSE = "M02.30"

attention = mutated_module(
    "modern_lm.attention",
    [("x.repeat_interleave(group_size, dim=1)", "x.repeat(1, group_size, 1, 1)")],
)
model = mutated_module(
    "modern_lm.model", rebind={"GroupedQueryAttention": attention.GroupedQueryAttention}
)
globals().update(export_with("modern_lm", model))
