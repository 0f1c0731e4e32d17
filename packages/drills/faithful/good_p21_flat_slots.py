"""A stranger's P21 from the README contract alone: flattens the pool to slots and gathers
with index_select on slot ids block * block_size + offset; rejects bad entries after the
table lookup (still before returning anything)."""

import torch

VARIABLE = "DRILL_P21_MODULE"


def paged_lookup(cache, block_table, positions):
    if cache.ndim != 4:
        raise ValueError("cache must be [num_blocks, block_size, Hkv, D]")
    if block_table.ndim != 2 or block_table.dtype not in (torch.int32, torch.int64):
        raise ValueError("block_table must be an integer [B, max_blocks] tensor")
    if positions.ndim != 2 or positions.dtype not in (torch.int32, torch.int64):
        raise ValueError("positions must be an integer [B, T] tensor")
    if positions.shape[0] != block_table.shape[0]:
        raise ValueError("positions and block_table need the same number of rows")
    for name, t in (("cache", cache), ("block_table", block_table), ("positions", positions)):
        if t.is_meta:
            raise ValueError(f"{name} holds no values (meta)")
    num_blocks, block_size, heads, dim = cache.shape
    if positions.numel() and (
        positions.min() < 0 or positions.max() >= block_table.shape[1] * block_size
    ):
        raise ValueError("positions reach outside the row's block table")
    logical = torch.div(positions, block_size, rounding_mode="floor").long()
    physical = torch.take_along_dim(block_table.long(), logical, dim=1)
    if physical.numel() and (physical.min() < 0 or physical.max() >= num_blocks):
        raise ValueError("block_table maps a position to a block the cache does not have")
    slots = physical * block_size + positions.long() % block_size
    flat = cache.reshape(num_blocks * block_size, heads, dim)
    return flat.index_select(0, slots.flatten()).reshape(*positions.shape, heads, dim)
