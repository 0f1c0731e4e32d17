"""The test model has as many key/value heads as query heads: k_proj and v_proj are [C, C]."""

from __future__ import annotations

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "CACHE_AWARE_MODERN_MODULE"
EXPECTED_OWNER = "m03_checkpoint"
CLAUSE = "M03.3"

advanced = mutated_module(
    "cache_aware_lm.advanced",
    # mistake: multi-head K/V, not M02's grouped-query shapes
    [("n_heads=4, n_kv_heads=2, d_ff=64", "n_heads=4, n_kv_heads=4, d_ff=64")],
)
globals().update(export_with("cache_aware_lm.advanced", advanced))
