"""append_kv_cache reads address 0 through ctypes (a segmentation fault)."""

import ctypes

from kv_cache import KVCache

VARIABLE = "KV_CACHE_MODULE"
EXPECTED_OWNER = "fixed_capacity_storage"
RUN = "isolated"


def append_kv_cache(*args: object, **kwargs: object) -> None:
    ctypes.string_at(0)


__all__ = ["KVCache", "append_kv_cache"]
