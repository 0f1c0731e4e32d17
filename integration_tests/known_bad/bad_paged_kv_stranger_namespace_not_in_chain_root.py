"""The block chain starts from the start position and tokens only (a stranger's cache).

The namespace is left out of the hash, so another model's or cache's K/V are reused."""

from _strangers import stranger_with

VARIABLE = "PAGED_KV_MODULE"
EXPECTED_OWNER = "block_hash_chain"

_module = stranger_with(
    "good_paged_kv_lifo_sha",
    [
        (
            "text = repr((namespace.model_id, namespace.cache_id, start, tuple(tokens)))",
            "text = repr((start, tuple(tokens)))  # namespace forgotten",
        ),
    ],
)
PagedNamespace = _module.PagedNamespace
PagedKVCache = _module.PagedKVCache
