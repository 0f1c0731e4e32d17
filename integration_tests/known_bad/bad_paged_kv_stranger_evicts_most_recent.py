"""Eviction takes the most recently released cached block (a stranger's cache)."""

from _strangers import stranger_with

VARIABLE = "PAGED_KV_MODULE"
EXPECTED_OWNER = "paged_prefix_cache"

_module = stranger_with(
    "good_paged_kv_lifo_sha",
    [
        (
            "block, _ = self._cached.popitem(last=False)",
            "block, _ = self._cached.popitem(last=True)",
        ),
    ],
)
PagedNamespace = _module.PagedNamespace
PagedKVCache = _module.PagedKVCache
