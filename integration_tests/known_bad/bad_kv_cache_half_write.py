"""KVCache.append validates each layer inside the write loop, so a bad later layer half-writes.

A call whose last layer has a wrong shape, dtype or device raises ValueError only
after the earlier layers were scattered into storage: the rejected call changed the
cache.
Validation is this project's extension (docs/contracts.md lists no kv_cache errors), so
the ladder grades this one on the whole suite.
"""

from __future__ import annotations

import kv_cache
from arg_checks import check_tensor
from kv_cache.slots import write_slots

VARIABLE = "KV_CACHE_MODULE"
EXPECTED_OWNER = "kv_cache_validation"
SCOPE = "all"  # validation is this project's extension: the contract lists no kv_cache errors

append_kv_cache = kv_cache.append_kv_cache


class KVCache(kv_cache.KVCache):
    def append(self, past_key_values, positions):
        T = self._check_positions(positions)
        if len(past_key_values) != len(self._storage):
            raise ValueError("past_key_values has the wrong number of layers")
        slots = positions - self._starts_B[:, None]
        B, H, _, D = self._storage[0][0].shape
        for index, ((key, value), (new_key, new_value)) in enumerate(
            zip(self._storage, past_key_values, strict=True)
        ):
            for name, tensor in (("key", new_key), ("value", new_value)):
                check_tensor(
                    f"past_key_values[{index}] {name}",
                    tensor,
                    shape=(B, H, T, D),
                    dtype=key.dtype,
                    device=key.device,
                )
            write_slots(key, value, new_key, new_value, slots)
        self._lengths_B += T
        self._logical_length += T
