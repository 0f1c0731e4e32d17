"""append_kv_cache aborts the process (SIGABRT)."""

import os

from kv_cache import KVCache

VARIABLE = "KV_CACHE_MODULE"
EXPECTED_OWNER = "fixed_capacity_storage"
RUN = "isolated"


def append_kv_cache(*args: object, **kwargs: object) -> None:
    os.abort()


__all__ = ["KVCache", "append_kv_cache"]
