"""The cache stores the K/V heads repeated to every query head: [B, H, S, D], not [B, K, S, D]."""

from __future__ import annotations

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "CACHE_AWARE_MODERN_MODULE"
EXPECTED_OWNER = "m03_gqa_cache"
CLAUSE = "M03.5"

advanced = mutated_module(
    "cache_aware_lm.advanced",
    [
        # mistake: repeat_interleave before the cache write (an MHA cache) ...
        (
            "keys, values = cache_writer.write(layer_index, k, v)",
            "group = self.n_heads // self.n_kv_heads\n"
            "        k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)\n"
            "        keys, values = cache_writer.write(layer_index, k, v)",
        ),
        # ... and a model that validates caches of H heads accordingly
        (
            "self.n_kv_heads = config.n_kv_heads\n        self.model",
            "self.n_kv_heads = config.n_heads\n        self.model",
        ),
    ],
)
globals().update(export_with("cache_aware_lm.advanced", advanced))
