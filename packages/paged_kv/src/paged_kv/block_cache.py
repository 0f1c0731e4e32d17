"""The prefix cache over blocks: hash -> block, and the LRU of cached free blocks.

A published block (full, hashed) stays findable by its hash for as long as its
memory is not needed: while requests hold it (in use) and after the last one lets
go (cached). Cached blocks wait in an LRU queue, least recently used first; only
they can be evicted, and evicting one forgets its hash. A block in use is never
in the queue, so it is never evicted.
"""

from __future__ import annotations

from collections import OrderedDict

from .hashing import BlockHash


class BlockCache:
    """hash <-> block maps, the eviction queue and the hit/miss/eviction counters."""

    def __init__(self) -> None:
        self._block_of: dict[BlockHash, int] = {}
        self._hash_of: dict[int, BlockHash] = {}
        # Cached blocks (published, reference count 0), least recently used first.
        self._lru: OrderedDict[int, None] = OrderedDict()
        self.hits = 0
        self.misses = 0
        self.evictions = 0

    def lookup(self, block_hash: BlockHash) -> int | None:
        return self._block_of.get(block_hash)

    def hash_of(self, block: int) -> BlockHash | None:
        return self._hash_of.get(block)

    def publish(self, block: int, block_hash: BlockHash) -> None:
        """Make a newly full block findable, unless an equal block already is."""
        if block_hash not in self._block_of and block not in self._hash_of:
            self._block_of[block_hash] = block
            self._hash_of[block] = block_hash

    def park(self, block: int) -> bool:
        """A block's last holder let go: keep it as most recently used if it is published."""
        if block not in self._hash_of:
            return False
        self._lru[block] = None
        return True

    def take(self, block: int) -> None:
        """A cached block is in use again: out of the eviction queue."""
        del self._lru[block]

    def evict_lru(self) -> int | None:
        """Forget the least recently used cached block and hand its memory over."""
        if not self._lru:
            return None
        block, _ = self._lru.popitem(last=False)
        del self._block_of[self._hash_of.pop(block)]
        self.evictions += 1
        return block

    @property
    def cached_count(self) -> int:
        return len(self._lru)

    def is_cached(self, block: int) -> bool:
        return block in self._lru
