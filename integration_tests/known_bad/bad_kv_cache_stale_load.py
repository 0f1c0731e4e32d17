"""KVCache.load copies the source rectangle and zeroes nothing: padding and old slots survive.

Each row's valid prefix is right, so a masked model call still agrees; but slots
past a row's length keep the source's padding and whatever the storage held.
"""

from __future__ import annotations

import kv_cache

VARIABLE = "KV_CACHE_MODULE"
EXPECTED_OWNER = "storage_lifecycle"

append_kv_cache = kv_cache.append_kv_cache


class KVCache(kv_cache.KVCache):
    def load(self, past_key_values, cache_lengths, cache_start_positions):
        S = self._check_kv("past_key_values", past_key_values, tokens=None)
        for stored, given in zip(self._storage, past_key_values, strict=True):
            for stored_tensor, given_tensor in zip(stored, given, strict=True):
                stored_tensor[:, :, :S].copy_(given_tensor)
        self._lengths_B.copy_(cache_lengths)
        self._starts_B.copy_(cache_start_positions)
        self._logical_length = int(cache_lengths.max())
