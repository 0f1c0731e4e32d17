"""append_kv_cache keeps allocating memory without bound."""

from kv_cache import KVCache

VARIABLE = "KV_CACHE_MODULE"
EXPECTED_OWNER = "fixed_capacity_storage"
RUN = "isolated"


def append_kv_cache(*args: object, **kwargs: object) -> None:
    hoard = []
    while True:
        hoard.append(bytearray(64 * 1024 * 1024))


__all__ = ["KVCache", "append_kv_cache"]
