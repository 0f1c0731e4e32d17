"""append_kv_cache calls sys.exit in library code, and KVCache.append raises KeyboardInterrupt."""

import sys

import kv_cache

VARIABLE = "KV_CACHE_MODULE"
EXPECTED_OWNER = "fixed_capacity_storage"
RUN = "isolated"


def append_kv_cache(*args: object, **kwargs: object) -> None:
    sys.exit("candidate gave up")


class KVCache(kv_cache.KVCache):
    def append(self, *args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt


__all__ = ["KVCache", "append_kv_cache"]
