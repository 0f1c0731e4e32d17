"""An append writes into a partial block another table still holds (a stranger's cache).

After a fork both requests write their next token into the same slot."""

from _strangers import stranger_with

VARIABLE = "PAGED_KV_MODULE"
EXPECTED_OWNER = "copy_on_write"

_module = stranger_with(
    "good_paged_kv_lifo_sha",
    [
        (
            "        if self._holders[shared] == 1:\n            return\n",
            "        if self._holders[shared] >= 1:\n            return  # never copied\n",
        ),
    ],
)
PagedNamespace = _module.PagedNamespace
PagedKVCache = _module.PagedKVCache
