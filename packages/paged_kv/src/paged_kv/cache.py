"""PagedKVCache: block pool, allocator, block tables and the prefix cache, composed.

Request lifecycle (each call validated first; a rejected call changes nothing):

    admit(id, prompt, namespace, start)  -> reuse the longest chain of cached full
        blocks of the prompt (at most B * floor((T - 1) / B) tokens), refcount + 1
    append(ids, token_ids, positions, kv) -> write each row's next T tokens; allocate
        blocks as they fill, copy a shared block before writing it, publish full blocks
    fork(parent, child)                  -> the child shares every parent block
    free(id)                             -> refcount - 1 per block; published blocks
        stay cached (LRU) until their memory is needed

``model_inputs(ids)`` gathers the rows' blocks into a cache-aware model's inputs.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from arg_checks import check_device, check_instance, check_int, check_tensor

from .allocator import BlockAllocator, BlockPoolExhaustedError
from .block_cache import BlockCache
from .block_table import BlockTable, slots_of
from .checks import check_request_id, token_list
from .hashing import BlockHash, PagedNamespace, block_hash, chain_hashes, full_blocks
from .pool import BlockPool, LayerKV, PastKeyValues
from .sizes import check_pool_fits, describe

ModelInputs = tuple[PastKeyValues | None, Tensor | None, Tensor | None]


@dataclass(frozen=True)
class PagedCacheStats:
    """Counters (lifetime) and holdings (now) of a paged cache."""

    hits: int  # full blocks reused at admission
    misses: int  # full blocks within the reuse cap that admission found no cached block for
    evictions: int  # cached blocks whose memory was taken for a new block
    cached_blocks: int  # published blocks no request holds, reusable until evicted
    bytes_held: int  # K/V bytes of every block in use or cached
    used_blocks: int  # blocks at least one request holds
    free_blocks: int  # blocks holding nothing


@dataclass
class _Grown:
    """What ``reserve`` did to one table, so ``abort`` can undo it exactly."""

    table: BlockTable
    old_block_count: int
    copied: tuple[int, int, int] | None = None  # (index, shared block, its private copy)


class PendingAppend:
    """Slots reserved by ``PagedKVCache.reserve``: write them, then ``commit`` (or ``abort``).

    ``slots`` ``[B, T]`` are the new tokens' flat pool slots; ``block_tables``,
    ``starts`` and ``new_lengths`` describe every row as it will be after the commit
    (what an attention kernel reading the pool in place needs). Until ``commit``
    nothing a reader sees has changed but the blocks reserved: ``abort`` gives them
    back and undoes every copy on write, so a failed computation loses nothing.
    """

    def __init__(self, cache: PagedKVCache, grown: list[_Grown], tokens: list[list[int]]) -> None:
        self._cache = cache
        self._grown = grown
        self._tables = [change.table for change in grown]
        self._tokens = tokens
        self._open = True
        T = len(tokens[0])
        rows = []
        for table in self._tables:
            first = table.start + table.length  # the row's next absolute position
            rows.append(slots_of(table, list(range(first, first + T)), cache.block_size, None))
        self.slots = torch.stack(rows).to(cache.device)  # [B, T] flat pool slots
        self.block_tables = [tuple(table.blocks) for table in self._tables]
        self.starts = [table.start for table in self._tables]
        self.new_lengths = [table.length + T for table in self._tables]

    def write(self, past_key_values: Sequence[LayerKV]) -> None:
        """Store the new tokens' K/V (per layer ``[B, H_kv, T, D]``, checked) at ``slots``."""
        self._cache._check_kv(past_key_values, len(self._tables), self.slots)
        with torch.no_grad():  # storage is state, never part of an autograd graph
            for layer, (key_new, value_new) in enumerate(past_key_values):
                self._cache._pool.write(layer, self.slots, key_new, value_new)

    def commit(self) -> None:
        """The written tokens count: lengths grow, newly full blocks are published."""
        self.apply(self.digests())

    def digests(self) -> list[list[BlockHash]]:
        """Every row's newly full blocks' hashes (computed first: nothing changes yet)."""
        self._check_open()
        return [
            self._cache._new_hashes(table, row)
            for table, row in zip(self._tables, self._tokens, strict=True)
        ]

    def apply(self, digests: list[list[BlockHash]]) -> None:
        """Grow the lengths and publish ``digests`` (plain list and dict updates only)."""
        self._check_open()
        self._open = False
        for table, row, hashes in zip(self._tables, self._tokens, digests, strict=True):
            table.tokens.extend(row)
            self._cache._publish(table, hashes)

    def abort(self) -> None:
        """Give back every reserved block and undo every copy on write, last row first."""
        self._check_open()
        self._open = False
        self._cache._undo(self._grown)

    def _check_open(self) -> None:
        if not self._open:
            raise RuntimeError("this reservation was already committed or aborted")


class PagedKVCache:
    """Paged K/V for many requests sharing one pool, with automatic prefix caching."""

    def __init__(
        self,
        layer_count: int,
        head_count: int,
        head_dim: int,
        num_blocks: int,
        block_size: int,
        *,
        dtype: torch.dtype = torch.float32,
        device: torch.device | str = "cpu",
    ) -> None:
        sizes = {
            "layer_count": layer_count,
            "head_count": head_count,
            "head_dim": head_dim,
            "num_blocks": num_blocks,
            "block_size": block_size,
        }
        for name, value in sizes.items():
            check_int(name, value, minimum=1)
        if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
            raise ValueError(f"dtype must be a floating torch.dtype, got {dtype!r}")
        where = check_device("device", device)
        needed = check_pool_fits(sizes, dtype, where)  # before any memory is asked for
        try:
            self._pool = BlockPool(
                layer_count, num_blocks, head_count, block_size, head_dim, dtype, where
            )
        except (RuntimeError, MemoryError) as error:  # the device's allocator said no
            raise ValueError(
                f"a pool of {describe(sizes)} ({dtype}) needs {needed:,} bytes, which "
                f"device {where} could not allocate"
            ) from error
        self._cache = BlockCache()
        self._allocator = BlockAllocator(num_blocks, self._cache)
        self._tables: dict[Hashable, BlockTable] = {}
        self.block_size = block_size
        self.num_blocks = num_blocks

    # ---- read-only state -------------------------------------------------------------

    @property
    def storage(self) -> PastKeyValues:
        """Per layer (key, value), each ``[num_blocks, H_kv, block_size, D]`` (same objects)."""
        return self._pool.storage

    @property
    def pool(self) -> BlockPool:
        """The block pool itself (the fast attention path reads and writes it in place)."""
        return self._pool

    @property
    def device(self) -> torch.device:
        return self._pool.storage[0][0].device

    @property
    def dtype(self) -> torch.dtype:
        return self._pool.storage[0][0].dtype

    @property
    def layer_count(self) -> int:
        return len(self._pool.storage)

    @property
    def request_ids(self) -> tuple[Hashable, ...]:
        return tuple(self._tables)

    @property
    def stats(self) -> PagedCacheStats:
        free = self._allocator.free_count
        cached = self._cache.cached_count
        return PagedCacheStats(
            hits=self._cache.hits,
            misses=self._cache.misses,
            evictions=self._cache.evictions,
            cached_blocks=cached,
            bytes_held=(self.num_blocks - free) * self._pool.block_bytes,
            used_blocks=self.num_blocks - free - cached,
            free_blocks=free,
        )

    def block_table(self, request_id: Hashable) -> tuple[int, ...]:
        return tuple(self._table(request_id).blocks)

    def cache_length(self, request_id: Hashable) -> int:
        """How many tokens of the request have K/V stored."""
        return self._table(request_id).length

    def ref_count(self, block: int) -> int:
        """How many block tables hold ``block`` (0: free or cached)."""
        if (
            isinstance(block, bool)
            or not isinstance(block, int)
            or not 0 <= block < self.num_blocks
        ):
            raise ValueError(f"block must be an int in [0, {self.num_blocks}), got {block!r}")
        return self._allocator.ref_count(block)

    def slot_mapping(self, request_id: Hashable, positions: Sequence[int] | Tensor) -> Tensor:
        """Flat pool slots (``block * block_size + offset``) of absolute positions, long ``[T]``."""
        table = self._table(request_id)
        wanted = token_list("positions", positions)
        end = table.start + len(table.blocks) * self.block_size
        for position in wanted:
            if not table.start <= position < end:
                raise ValueError(
                    f"positions must lie in the request's blocks [{table.start}, {end}), "
                    f"got {position}"
                )
        return slots_of(table, wanted, self.block_size, self.device)

    # ---- lifecycle -------------------------------------------------------------------

    def admit(
        self,
        request_id: Hashable,
        token_ids: Sequence[int] | Tensor,
        namespace: PagedNamespace,
        start_position: int = 0,
    ) -> int:
        """Open a request and reuse its prompt's longest cached chain; returns reused tokens."""
        check_request_id("request_id", request_id)
        if request_id in self._tables:
            raise ValueError(f"request_id {request_id!r} is already admitted")
        prompt = token_list("token_ids", token_ids)
        namespace = check_instance("namespace", namespace, PagedNamespace)
        start = check_int("start_position", start_position, minimum=0)

        # At least one prompt token is always left to compute (it yields the next logits).
        cap = self.block_size * ((len(prompt) - 1) // self.block_size)
        hashes = chain_hashes(prompt[:cap], self.block_size, namespace, start)
        reused: list[int] = []
        for digest in hashes:
            block = self._cache.lookup(digest)
            if block is None:
                break  # a chain stops at its first miss: later blocks have other parents
            reused.append(block)
        for block in reused:
            self._allocator.share(block)
        self._cache.hits += len(reused)
        self._cache.misses += len(hashes) - len(reused)
        tokens = prompt[: len(reused) * self.block_size]
        self._tables[request_id] = BlockTable(
            namespace, start, reused, tokens, hashes[: len(reused)]
        )
        return len(tokens)

    def fork(self, parent_id: Hashable, child_id: Hashable) -> None:
        """A new request holding every block of ``parent_id`` (the partial last block too)."""
        parent = self._table(parent_id, "parent_id")
        check_request_id("child_id", child_id)
        if child_id in self._tables:
            raise ValueError(f"child_id {child_id!r} is already admitted")
        for block in parent.blocks:
            self._allocator.share(block)
        self._tables[child_id] = parent.copy()

    def append(
        self,
        request_ids: Sequence[Hashable],
        token_ids: Tensor,
        positions: Tensor,
        past_key_values: Sequence[LayerKV],
    ) -> None:
        """Store each row's next T tokens and their K/V (per layer ``[B, H_kv, T, D]``)."""
        self._check_kv(past_key_values, len(request_ids), token_ids)
        pending = self.reserve(request_ids, token_ids, positions)
        try:
            pending.write(past_key_values)
        except BaseException:
            pending.abort()
            raise
        pending.commit()

    def reserve(
        self, request_ids: Sequence[Hashable], token_ids: Tensor, positions: Tensor
    ) -> PendingAppend:
        """Validate an append, allocate (and copy on write) its blocks, return its slots.

        The caller writes K/V at ``slots`` (``[B, T]`` flat pool slots), then commits
        (or aborts: every block goes back, every copy on write is undone). A reserve
        that fails part-way is undone the same way.
        """
        tables = self._tables_of(request_ids)
        tokens, T = self._check_rows(tables, token_ids, positions)
        self._ensure_available(tables, T)
        grown: list[_Grown] = []
        try:
            for table in tables:
                grown.append(_Grown(table, len(table.blocks)))
                self._make_writable(grown[-1], T)
            return PendingAppend(self, grown, tokens)
        except BaseException:
            self._undo(grown)
            raise

    def free(self, request_id: Hashable) -> None:
        """Close a request: every block loses a holder, the deepest block first.

        Freed published blocks join the LRU in that order, so a prefix's deeper blocks
        are evicted before its root (a root evicted first would strand them).
        """
        table = self._table(request_id)
        del self._tables[request_id]
        for block in reversed(table.blocks):
            self._allocator.release(block)

    def model_inputs(self, request_ids: Sequence[Hashable]) -> ModelInputs:
        """``(past_key_values, cache_lengths, cache_start_positions)`` for these rows.

        New tensors ``[B, H_kv, max length, D]`` per layer gathered through the block
        tables (the reference path); padding is zero. ``(None, None, None)`` when every
        row is empty.
        """
        tables = self._tables_of(request_ids)
        device = self.device
        lengths = torch.tensor([t.length for t in tables], dtype=torch.long, device=device)
        starts = torch.tensor([t.start for t in tables], dtype=torch.long, device=device)
        longest = max(t.length for t in tables)
        if longest == 0:
            return None, None, None
        slots_BL = torch.zeros(len(tables), longest, dtype=torch.long)
        for row, table in enumerate(tables):
            positions = list(range(table.start, table.start + table.length))
            slots_BL[row, : table.length] = slots_of(table, positions, self.block_size, None)
        slots_BL = slots_BL.to(device)
        padding_B1L1 = (torch.arange(longest, device=device) >= lengths[:, None])[:, None, :, None]
        past = []
        for layer in range(self.layer_count):
            key_HBLD, value_HBLD = self._pool.gather(layer, slots_BL)
            past.append(
                (
                    key_HBLD.transpose(0, 1).masked_fill(padding_B1L1, 0),
                    value_HBLD.transpose(0, 1).masked_fill(padding_B1L1, 0),
                )
            )
        return tuple(past), lengths, starts

    # ---- internals -------------------------------------------------------------------

    def _table(self, request_id: Hashable, name: str = "request_id") -> BlockTable:
        check_request_id(name, request_id)
        table = self._tables.get(request_id)
        if table is None:
            raise ValueError(f"{name} {request_id!r} is not admitted")
        return table

    def _tables_of(self, request_ids: Sequence[Hashable]) -> list[BlockTable]:
        if isinstance(request_ids, str | bytes) or not isinstance(request_ids, Sequence):
            raise ValueError("request_ids must be a sequence of admitted request ids")
        if not request_ids:
            raise ValueError("request_ids must name at least one request")
        if len(set(request_ids)) != len(request_ids):
            raise ValueError(f"request_ids must be distinct, got {list(request_ids)!r}")
        return [self._table(request_id) for request_id in request_ids]

    def _check_rows(
        self, tables: list[BlockTable], token_ids: object, positions: object
    ) -> tuple[list[list[int]], int]:
        """Token ids and positions ``[B, T]`` long; positions are each row's next T."""
        B = len(tables)
        token_ids = check_tensor(
            "token_ids", token_ids, shape=(B, None), dtype=torch.long, device=self.device
        )
        T = token_ids.shape[1]
        if T == 0:
            raise ValueError("token_ids must hold at least one token per row")
        positions = check_tensor(
            "positions", positions, shape=(B, T), dtype=torch.long, device=self.device
        )
        rows = token_ids.tolist()
        if min(min(row) for row in rows) < 0:
            raise ValueError("token_ids must be non-negative token ids")
        for row, (table, got) in enumerate(zip(tables, positions.tolist(), strict=True)):
            first = table.start + table.length
            if got != list(range(first, first + T)):
                raise ValueError(
                    f"positions of row {row} must be its next positions {first}..{first + T - 1} "
                    f"(start {table.start} + length {table.length} onward), got {got}"
                )
        return rows, T

    def _check_kv(self, past_key_values: object, B: int, token_ids: object) -> None:
        key0 = self._pool.storage[0][0]
        _, H, _, D = key0.shape
        T = token_ids.shape[1] if isinstance(token_ids, Tensor) and token_ids.dim() == 2 else None
        if not isinstance(past_key_values, Sequence) or len(past_key_values) != self.layer_count:
            raise ValueError(
                f"past_key_values must hold one (key, value) pair per layer ({self.layer_count})"
            )
        for index, pair in enumerate(past_key_values):
            if not isinstance(pair, Sequence) or len(pair) != 2:
                raise ValueError(f"past_key_values[{index}] must be a (key, value) pair")
            for kind, tensor in zip(("key", "value"), pair, strict=True):
                check_tensor(
                    f"past_key_values[{index}] {kind}",
                    tensor,
                    shape=(B, H, T, D),
                    dtype=self.dtype,
                    device=self.device,
                )

    def _blocks_needed(self, table: BlockTable, T: int, copies: dict[int, int]) -> int:
        """New blocks one row's append takes: growth, plus a copy of a shared partial block."""
        needed = max(0, -(-(table.length + T) // self.block_size) - len(table.blocks))
        if table.length % self.block_size:
            last = table.blocks[table.length // self.block_size]
            # Holders that copy away earlier in this append no longer share it.
            if self._allocator.ref_count(last) - copies.get(last, 0) > 1:
                copies[last] = copies.get(last, 0) + 1
                needed += 1
        return needed

    def _ensure_available(self, tables: list[BlockTable], T: int) -> None:
        copies: dict[int, int] = {}
        needed = sum(self._blocks_needed(table, T, copies) for table in tables)
        available = self._allocator.available
        if needed > available:
            raise BlockPoolExhaustedError(
                f"the append needs {needed} blocks but only {available} are free or cached "
                f"(pool of {self.num_blocks})"
            )

    def _make_writable(self, change: _Grown, T: int) -> None:
        """Copy a shared block about to be written (copy on write), then grow the table."""
        table = change.table
        if table.length % self.block_size:
            index = table.length // self.block_size
            shared = table.blocks[index]
            if self._allocator.ref_count(shared) > 1:
                private = self._allocator.allocate()
                change.copied = (index, shared, private)
                self._pool.copy_block(shared, private)
                self._allocator.release(shared)
                table.blocks[index] = private
        while len(table.blocks) * self.block_size < table.length + T:
            table.blocks.append(self._allocator.allocate())

    def _undo(self, grown: list[_Grown]) -> None:
        """Reverse ``_make_writable`` for these tables, last first (see ``PendingAppend``).

        Blocks come back unpublished (free); a cached block evicted to make room stays
        forgotten (a later prefix miss, never a wrong hit).
        """
        for change in reversed(grown):
            table = change.table
            while len(table.blocks) > change.old_block_count:
                self._allocator.release(table.blocks.pop())
            if change.copied is not None:
                index, shared, private = change.copied
                self._allocator.share(shared)  # still held by the others: no cache move
                table.blocks[index] = shared
                self._allocator.release(private)
                change.copied = None

    def _new_hashes(self, table: BlockTable, new_tokens: list[int]) -> list[BlockHash]:
        """Chained hashes of the blocks that ``new_tokens`` make full (nothing changes)."""
        bs = self.block_size
        tokens = table.tokens + new_tokens
        hashes: list[BlockHash] = []
        parent = table.hashes[-1] if table.hashes else None
        for index in range(len(table.hashes), full_blocks(len(tokens), bs)):
            parent = block_hash(
                parent, tokens[index * bs : (index + 1) * bs], table.namespace, table.start
            )
            hashes.append(parent)
        return hashes

    def _publish(self, table: BlockTable, hashes: list[BlockHash]) -> None:
        """Record the table's new full-block hashes and make those blocks findable."""
        for digest in hashes:
            self._cache.publish(table.blocks[len(table.hashes)], digest)
            table.hashes.append(digest)
