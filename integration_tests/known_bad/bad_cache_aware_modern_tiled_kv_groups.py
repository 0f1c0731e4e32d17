"""Query head h reads key/value head h % K (the K/V heads tiled), not h // (H / K)."""

from __future__ import annotations

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "CACHE_AWARE_MODERN_MODULE"
EXPECTED_OWNER = "m03_logits"
CLAUSE = "M03.4"

advanced = mutated_module(
    "cache_aware_lm.advanced",
    [
        (
            "attend(q, keys, values, mask)",
            # mistake: .repeat tiles the heads (0, 1, 0, 1) where M02 groups them (0, 0, 1, 1)
            "attend(q, keys.repeat(1, self.n_heads // self.n_kv_heads, 1, 1),"
            " values.repeat(1, self.n_heads // self.n_kv_heads, 1, 1), mask)",
        )
    ],
)
globals().update(export_with("cache_aware_lm.advanced", advanced))
