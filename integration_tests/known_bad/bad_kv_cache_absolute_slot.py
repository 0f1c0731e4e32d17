"""KVCache.append writes at slot = absolute position, forgetting to subtract the row's start.

Rows that start at 0 are unaffected; any row with a later origin lands its tokens
start[b] slots too far (or off the end of the storage).
"""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "KV_CACHE_MODULE"
EXPECTED_OWNER = "fixed_capacity_storage"

slots = ("slots_BT = positions - self._starts_B[:, None]", "slots_BT = positions")
globals().update(export_with("kv_cache", mutated_module("kv_cache.cache", [slots])))
