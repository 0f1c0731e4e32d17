"""A cached block reused by a new request stays in the eviction queue while in use.

Under memory pressure the allocator then evicts a block a running request still
reads, and hands its memory to someone else.
"""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "PAGED_KV_MODULE"
EXPECTED_OWNER = "paged_prefix_cache"

allocator = mutated_module(
    "paged_kv.allocator",
    [("self._cache.take(block)", "pass  # stays evictable")],
    within="BlockAllocator.share",
)
cache = mutated_module("paged_kv.cache", rebind={"BlockAllocator": allocator.BlockAllocator})
globals().update(export_with("paged_kv", cache))
