"""The block allocator: a free queue and one reference count per block.

Every block is exactly one of: free (in the free queue), in use (reference
count > 0: that many block tables hold it) or cached (count 0, published, in the
block cache's LRU queue). Allocation takes a free block first and evicts the
least recently used cached block only when none is free.

The free queue is blocks never handed out (``next_fresh .. num_blocks - 1``, in
order) followed by returned blocks (a deque, in release order): the same FIFO as
one queue of every block, without building a Python list of ``num_blocks`` ids.
"""

from __future__ import annotations

from collections import deque

from .block_cache import BlockCache


class BlockPoolExhaustedError(RuntimeError):
    """No free and no cached block is left for an allocation."""


class BlockAllocator:
    """Hands out block ids, counts their holders, returns them when the count drops to 0."""

    def __init__(self, num_blocks: int, cache: BlockCache) -> None:
        self._num_blocks = num_blocks
        self._next_fresh = 0  # blocks from here on were never handed out (all free)
        self._free: deque[int] = deque()  # returned blocks, oldest release first
        self._ref_counts: dict[int, int] = {}  # blocks held now; absent means 0
        self._cache = cache

    @property
    def free_count(self) -> int:
        return self._num_blocks - self._next_fresh + len(self._free)

    @property
    def available(self) -> int:
        """Blocks an allocation may take: free ones, then evictable cached ones."""
        return self.free_count + self._cache.cached_count

    def ref_count(self, block: int) -> int:
        return self._ref_counts.get(block, 0)

    def allocate(self) -> int:
        """A block for one new holder: free first, else the LRU cached block's memory."""
        if self._next_fresh < self._num_blocks:
            block = self._next_fresh  # never handed out: before every returned block
            self._next_fresh += 1
        elif self._free:
            block = self._free.popleft()
        else:
            evicted = self._cache.evict_lru()
            if evicted is None:
                raise BlockPoolExhaustedError("the block pool has no free or cached block left")
            block = evicted
        self._ref_counts[block] = 1
        return block

    def share(self, block: int) -> None:
        """One more holder of a block (a prefix hit, a fork); a cached block is in use again."""
        count = self._ref_counts.get(block, 0)
        if count == 0:
            self._cache.take(block)
        self._ref_counts[block] = count + 1

    def release(self, block: int) -> None:
        """One holder fewer; at zero the block goes to the cache (if published) or is freed."""
        count = self._ref_counts[block] - 1
        if count:
            self._ref_counts[block] = count
            return
        del self._ref_counts[block]
        if not self._cache.park(block):
            self._free.append(block)
