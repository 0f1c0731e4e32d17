"""P21 paged-cache lookup: gather each row's tokens through its block table.

A paged cache stores tokens in fixed-size physical blocks shared by every request; row b's
logical position p lives in physical block `block_table[b, p // block_size]` at offset
`p % block_size`. Physical blocks are in any order, and two rows may share one (a common
prefix). A table entry below 0 marks an unallocated block: allowed while no position reads
through it, rejected (not masked) when one does.

Shapes: cache [num_blocks, block_size, Hkv, D]; block_table [B, max_blocks] (integer);
positions [B, T] (integer, 0 <= p < max_blocks * block_size). Returns [B, T, Hkv, D].
"""

from __future__ import annotations

import torch
from torch import Tensor

from ._describe import described

_INTEGER = (torch.int32, torch.int64)


def paged_lookup(cache: Tensor, block_table: Tensor, positions: Tensor) -> Tensor:
    """out[b, t] = cache[block_table[b, p // block_size], p % block_size], p = positions[b, t]."""
    _check_shapes(cache, block_table, positions)
    block_size = cache.shape[1]
    positions = positions.long()
    blocks = block_table.long().gather(1, positions // block_size)  # [B, T] physical blocks
    _check_blocks(blocks, positions, cache.shape[0])
    # Advanced indexing with two [B, T] index tensors gathers [B, T, Hkv, D]: a new tensor.
    return cache[blocks, positions % block_size]


def _check_shapes(cache: Tensor, block_table: Tensor, positions: Tensor) -> None:
    """Reject bad ranks, dtypes, devices and positions before any gather."""
    if not isinstance(cache, Tensor) or cache.dim() != 4:
        raise ValueError(
            f"cache must be a [blocks, block_size, Hkv, D] tensor, got {described(cache)}"
        )
    for name, table in (("block_table", block_table), ("positions", positions)):
        if not isinstance(table, Tensor) or table.dim() != 2:
            raise ValueError(f"{name} must be a 2-D tensor, got {described(table)}")
        if table.dtype not in _INTEGER:  # bool included: a mask is not a table
            raise TypeError(f"{name} must be int32 or int64, got {table.dtype}")
    for name, tensor in (("cache", cache), ("block_table", block_table), ("positions", positions)):
        if tensor.device.type == "meta":  # no values: nothing to look up or check
            raise ValueError(f"{name} is a meta tensor")
    if positions.shape[0] != block_table.shape[0]:
        raise ValueError(
            f"positions has {positions.shape[0]} rows, block_table {block_table.shape[0]}"
        )
    if len({cache.device, block_table.device, positions.device}) != 1:
        raise ValueError("cache, block_table and positions must share a device")
    reach = block_table.shape[1] * cache.shape[1]
    outside = ((positions < 0) | (positions >= reach)).nonzero()
    if len(outside):
        b, t = outside[0].tolist()
        raise ValueError(f"positions[{b}, {t}] = {int(positions[b, t])} is outside 0..{reach - 1}")


def _check_blocks(blocks: Tensor, positions: Tensor, num_blocks: int) -> None:
    """Every block a position reads through must be a real physical block."""
    bad = ((blocks < 0) | (blocks >= num_blocks)).nonzero()
    if len(bad):
        b, t = bad[0].tolist()
        raise ValueError(
            f"block_table[{b}] maps positions[{b}, {t}] = {int(positions[b, t])} to block "
            f"{int(blocks[b, t])}, not one of the cache's {num_blocks} blocks"
        )


__all__ = ["paged_lookup"]
