"""kv_cache: request-owned fixed-capacity K/V storage with in-place slot writes.

`append_kv_cache` scatters new K/V into preallocated `[B, H_kv, S, D]` storage at
row-local slots; `KVCache` owns one request's storage and its per-row lengths and
start positions, with `slot = position - start`.
"""

from .cache import KVCache
from .checks import LayerKV, PastKeyValues
from .slots import append_kv_cache

__all__ = ["KVCache", "LayerKV", "PastKeyValues", "append_kv_cache"]
