"""Freeing a request does not lower the count of blocks other tables still hold.

A shared block's count only goes down when it reaches its last holder, so counts stay
too high and shared blocks are never cached or freed."""

from _strangers import stranger_with

VARIABLE = "PAGED_KV_MODULE"
EXPECTED_OWNER = "block_allocator"

_module = stranger_with(
    "good_paged_kv_lifo_sha",
    [
        (
            "        self._holders[block] -= 1\n        if self._holders[block] == 0:",
            "        if self._holders[block] == 1:  # decremented only for the last holder\n            self._holders[block] = 0",
        ),
    ],
)
PagedNamespace = _module.PagedNamespace
PagedKVCache = _module.PagedKVCache
