"""The serving writer stores each call's K/V in slots 0..T-1 (chunk-local), not position - start."""

import cache_aware_lm
from gptlab_testkit.mutants import mutated_module

VARIABLE = "CACHE_AWARE_LM_MODULE"
EXPECTED_OWNER = "serving_decode"
SCOPE = "all"  # the serving path is this project's extension, beyond the contract

# mistake: arange(T) slots, as if each call began an empty cache; decode overwrites slot 0
chunk_local = (
    "InPlaceCacheWriter(layers, slots_BT, attend_length)",
    "InPlaceCacheWriter(layers, slots_BT - slots_BT[:, :1], attend_length)",
)
serving = mutated_module("cache_aware_lm.serving", [chunk_local])

globals().update({name: getattr(cache_aware_lm, name) for name in cache_aware_lm.__all__})
serve_generate = serving.serve_generate
