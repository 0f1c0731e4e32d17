"""KVCache.reset allocates fresh zero storage instead of keeping the request's tensors.

Lengths and starts are reset correctly and old tokens are gone, but every view or
pointer taken before the reset now refers to memory the cache no longer uses.
"""

from __future__ import annotations

import torch

import kv_cache

VARIABLE = "KV_CACHE_MODULE"
EXPECTED_OWNER = "storage_lifecycle"

append_kv_cache = kv_cache.append_kv_cache


class KVCache(kv_cache.KVCache):
    def reset(self, start_positions=None):
        super().reset(start_positions)
        self._storage = tuple(
            (torch.zeros_like(key), torch.zeros_like(value)) for key, value in self._storage
        )
