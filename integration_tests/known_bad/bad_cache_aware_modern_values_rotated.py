"""The values are rotated too, like the keys, before they are cached and attended."""

from __future__ import annotations

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "CACHE_AWARE_MODERN_MODULE"
EXPECTED_OWNER = "m03_gqa_cache"
CLAUSE = "M03.6"

advanced = mutated_module(
    "cache_aware_lm.advanced",
    [
        (
            "v = split_heads(self.v_proj(x), self.n_kv_heads)",
            # mistake: M02 rotates q and k only
            "v = apply_rotary(split_heads(self.v_proj(x), self.n_kv_heads), cos, sin)",
        )
    ],
)
globals().update(export_with("cache_aware_lm.advanced", advanced))
