"""paged_kv: paged K/V blocks with automatic prefix caching.

One preallocated pool of fixed-size blocks per layer (``[num_blocks, H_kv,
block_size, D]``), a block allocator (free queue, reference counts), per-request
block tables with ``slot = table[(p - start) // B] * B + (p - start) % B``, and
prefix caching by chained block hashes: a new request reuses the longest chain of
cached full blocks without a copy, a shared block is copied before it is written,
and freed blocks stay reusable in LRU order until their memory is needed.
"""

from .allocator import BlockAllocator, BlockPoolExhaustedError
from .block_cache import BlockCache
from .block_table import BlockTable, slot_of
from .cache import PagedCacheStats, PagedKVCache, PendingAppend
from .hashing import BlockHash, PagedNamespace, block_hash, chain_hashes
from .paged_attention import PagedCacheWriter, paged_forward_fast, pool_slot_positions
from .pool import BlockPool, LayerKV, PastKeyValues
from .runner import new_token_kv, paged_forward

__all__ = [
    "BlockAllocator",
    "BlockCache",
    "BlockHash",
    "BlockPool",
    "BlockPoolExhaustedError",
    "BlockTable",
    "LayerKV",
    "PagedCacheStats",
    "PagedCacheWriter",
    "PagedKVCache",
    "PagedNamespace",
    "PastKeyValues",
    "PendingAppend",
    "block_hash",
    "chain_hashes",
    "new_token_kv",
    "paged_forward",
    "paged_forward_fast",
    "pool_slot_positions",
    "slot_of",
]
