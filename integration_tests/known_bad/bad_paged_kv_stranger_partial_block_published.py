"""A block is published as soon as it is written, full or not (a stranger's cache).

A later prompt ending inside it reuses the partial block, and both then write into it."""

from _strangers import stranger_with

VARIABLE = "PAGED_KV_MODULE"
EXPECTED_OWNER = "paged_prefix_cache"

_module = stranger_with(
    "good_paged_kv_lifo_sha",
    [
        (
            "        while len(request.digests) < len(request.tokens) // size:",
            "        while len(request.digests) < -(-len(request.tokens) // size):",
        ),
        (
            "        eligible = (len(tokens) - 1) // size",
            "        eligible = -(-(len(tokens) - 1) // size)",
        ),
    ],
)
PagedNamespace = _module.PagedNamespace
PagedKVCache = _module.PagedKVCache
