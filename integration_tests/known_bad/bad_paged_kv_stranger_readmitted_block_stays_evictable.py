"""A cached block re-admitted by a new request stays in the eviction queue (a stranger's cache).

Under pressure the allocator evicts a block a running request still reads and hands
its memory to another request."""

from _strangers import stranger_with

VARIABLE = "PAGED_KV_MODULE"
EXPECTED_OWNER = "paged_prefix_cache"

_module = stranger_with(
    "good_paged_kv_lifo_sha",
    [
        (
            "        self._holders[block] += 1\n        self._cached.pop(block, None)\n",
            "        self._holders[block] += 1  # stays in the eviction queue\n",
        ),
    ],
)
PagedNamespace = _module.PagedNamespace
PagedKVCache = _module.PagedKVCache
