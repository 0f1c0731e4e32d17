"""KVCache.model_inputs hands the model the full-capacity storage instead of slicing it.

A masked model still computes the right logits (the extra slots are padding), but
every step now attends over `capacity` slots and the returned K/V are not the
`logical_length` views the contract promises.
"""

from __future__ import annotations

import kv_cache

VARIABLE = "KV_CACHE_MODULE"
EXPECTED_OWNER = "storage_lifecycle"

append_kv_cache = kv_cache.append_kv_cache


class KVCache(kv_cache.KVCache):
    def model_inputs(self):
        if self.logical_length == 0:
            return None, None, None
        return self.storage, self.cache_lengths, self.cache_start_positions
