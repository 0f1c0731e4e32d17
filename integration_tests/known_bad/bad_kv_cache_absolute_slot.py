"""KVCache.append writes at slot = absolute position, forgetting to subtract the row's start.

Rows that start at 0 are unaffected; any row with a later origin lands its tokens
start[b] slots too far (or off the end of the storage).
"""

from __future__ import annotations

import kv_cache
from kv_cache.slots import write_slots

VARIABLE = "KV_CACHE_MODULE"
EXPECTED_OWNER = "fixed_capacity_storage"

append_kv_cache = kv_cache.append_kv_cache


class KVCache(kv_cache.KVCache):
    def append(self, past_key_values, positions):
        T = self._check_positions(positions)
        self._check_kv("past_key_values", past_key_values, tokens=T)
        slots = positions  # should be positions - start
        for (key, value), (new_key, new_value) in zip(self._storage, past_key_values, strict=True):
            write_slots(key, value, new_key, new_value, slots)
        self._lengths_B += T
        self._logical_length += T
