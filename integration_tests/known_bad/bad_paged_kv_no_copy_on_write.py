"""A block shared by a fork is written in place: no copy on write.

The parent and the child hold the same partial block; the first one to append
overwrites the other's slots.
"""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "PAGED_KV_MODULE"
EXPECTED_OWNER = "copy_on_write"

cow = ("if self._allocator.ref_count(shared) > 1:", "if False:  # never copy")
globals().update(
    export_with(
        "paged_kv", mutated_module("paged_kv.cache", [cow], within="PagedKVCache._make_writable")
    )
)
