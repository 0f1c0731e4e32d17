"""The fast path: attend over the pool in place, through the block tables.

The reference path (``runner.paged_forward``) gathers every row's blocks into a new
``[B, H_kv, L, D]`` cache and the model copies it again into its functional
output. Here nothing is gathered:

- each layer's new K/V are written straight into the pool at the rows' slots
  (``PagedCacheWriter``, the model's ``CacheWriter`` seam);
- attention reads the pool's used range as ``[H_kv, S, D]`` views (the pool is
  head-major, so this is a view) with one mask built once per call from the block
  tables: pool slot s is visible to row b's query at position q iff s belongs to
  one of b's blocks, at logical index l, and ``start_b + l <= q``
  (the absolute-position mask, in pool coordinates).

The work grows with the pool's used range rather than each row's length; the
copies are gone. Needs the model's ``run_blocks`` / ``lm_head`` seam
(``cache_aware_lm.ServableModel``); tested against the reference path.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import torch
from torch import Tensor

from cache_aware_lm import ServableModel, folded_grouped_query_attention

from .cache import PagedKVCache, PendingAppend
from .call_checks import check_call
from .pool import BlockPool, LayerKV


def pool_slot_positions(pending: PendingAppend, block_size: int, device: torch.device) -> Tensor:
    """``[B, S]``: the absolute position row b keeps in pool slot s, or -1 (not b's).

    S covers pool blocks ``0 .. max block id`` of the batch: the used range.
    """
    B = len(pending.block_tables)
    used = (max(max(blocks) for blocks in pending.block_tables) + 1) * block_size
    rows, slots, positions = [], [], []
    for row, (blocks, start, length) in enumerate(
        zip(pending.block_tables, pending.starts, pending.new_lengths, strict=True)
    ):
        logical = torch.arange(length)
        table = torch.tensor(blocks, dtype=torch.long)
        rows.append(torch.full((length,), row, dtype=torch.long))
        slots.append(table[logical // block_size] * block_size + logical % block_size)
        positions.append(start + logical)
    slot_positions = torch.full((B, used), -1, dtype=torch.long)
    slot_positions[torch.cat(rows), torch.cat(slots)] = torch.cat(positions)
    return slot_positions.to(device)


class PagedCacheWriter:
    """A ``cache_aware_lm.CacheWriter`` over the pool: write in place, attend over the pool."""

    def __init__(self, pool: BlockPool, slots_BT: Tensor, used_slots: int) -> None:
        self._pool = pool
        self._slots_BT = slots_BT
        self._used = used_slots

    @property
    def storage_length(self) -> int:
        return self._used

    def write(self, layer_index: int, key_new: Tensor, value_new: Tensor) -> LayerKV:
        self._pool.write(layer_index, self._slots_BT, key_new, value_new)
        key_HSD, value_HSD = self._pool.slots_view(layer_index)
        B = key_new.shape[0]
        # The same pool for every row (stride-0 batch): the mask tells the rows apart.
        keys = key_HSD[None, :, : self._used].expand(B, -1, -1, -1)
        values = value_HSD[None, :, : self._used].expand(B, -1, -1, -1)
        return keys, values


def paged_forward_fast(
    model: ServableModel,
    cache: PagedKVCache,
    request_ids: Sequence[Hashable],
    input_ids: Tensor,
    positions: Tensor,
) -> Tensor:
    """``runner.paged_forward`` without gathering: the same logits ``[B, T, V]`` and pool."""
    check_call(model, cache, request_ids, input_ids, positions, servable=True)
    pending = cache.reserve(request_ids, input_ids, positions)
    try:
        slot_positions_BS = pool_slot_positions(pending, cache.block_size, cache.device)
        visible = (slot_positions_BS[:, None, :] >= 0) & (
            slot_positions_BS[:, None, :] <= positions[:, :, None]
        )
        writer = PagedCacheWriter(cache.pool, pending.slots, slot_positions_BS.shape[1])
        with torch.no_grad():
            hidden, _ = model.run_blocks(
                input_ids, positions, visible[:, None], writer, folded_grouped_query_attention
            )
            logits: Tensor = model.lm_head(hidden)
    except BaseException:
        pending.abort()  # the reserved blocks go back: a failed call changes nothing
        raise
    pending.commit()
    return logits
