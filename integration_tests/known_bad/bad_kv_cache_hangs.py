"""append_kv_cache never returns (a loop with no exit)."""

from kv_cache import KVCache

VARIABLE = "KV_CACHE_MODULE"
EXPECTED_OWNER = "fixed_capacity_storage"
RUN = "isolated"


def append_kv_cache(*args: object, **kwargs: object) -> None:
    while True:
        pass


__all__ = ["KVCache", "append_kv_cache"]
