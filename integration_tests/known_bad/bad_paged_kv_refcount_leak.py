"""Copy on write takes a private block but never releases the shared one: its count leaks.

The shared block keeps a holder that no table has; after every request is freed
it is still "in use", so the pool shrinks with every fork that diverges.
"""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "PAGED_KV_MODULE"
EXPECTED_OWNER = "block_allocator"

leak = ("self._allocator.release(shared)", "pass  # the shared block keeps its count")
globals().update(
    export_with(
        "paged_kv", mutated_module("paged_kv.cache", [leak], within="PagedKVCache._make_writable")
    )
)
