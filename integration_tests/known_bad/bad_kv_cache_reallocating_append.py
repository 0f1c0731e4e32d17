"""KVCache.append rebuilds each layer's K/V out of place (scatter, not scatter_), so storage moves.

The written values are right; what breaks is the ownership invariant: `storage`
is no longer the same tensors, and append_kv_cache never writes the caller's cache.
"""

from __future__ import annotations

import kv_cache

VARIABLE = "KV_CACHE_MODULE"
EXPECTED_OWNER = "fixed_capacity_storage"


def _scatter(cache, new, slots):
    B, H, T, D = new.shape
    return cache.scatter(2, slots[:, None, :, None].expand(B, H, T, D), new)


def append_kv_cache(key_cache, value_cache, key_new, value_new, slots):
    key_cache = _scatter(key_cache, key_new, slots)  # rebinds a local: the caller sees nothing
    value_cache = _scatter(value_cache, value_new, slots)


class KVCache(kv_cache.KVCache):
    def append(self, past_key_values, positions):
        T = self._check_positions(positions)
        self._check_kv("past_key_values", past_key_values, tokens=T)
        slots = positions - self._starts_B[:, None]
        self._storage = tuple(
            (_scatter(key, new_key, slots), _scatter(value, new_value, slots))
            for (key, value), (new_key, new_value) in zip(
                self._storage, past_key_values, strict=True
            )
        )
        self._lengths_B += T
        self._logical_length += T
