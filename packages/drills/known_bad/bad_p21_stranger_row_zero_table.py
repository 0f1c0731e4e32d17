"""A stranger's loop looks every row up through row 0's block table (batch mixing)."""

import torch

VARIABLE = "DRILL_P21_MODULE"
EXPECTED_OWNER = "p21"


def paged_lookup(cache, block_table, positions):
    B, T = positions.shape
    size = cache.shape[1]
    if block_table.shape[0] != B or block_table.is_floating_point():
        raise ValueError("block_table must be an integer [B, max_blocks] tensor")
    out = torch.empty(B, T, *cache.shape[2:], dtype=cache.dtype)
    for b in range(B):
        for t in range(T):
            p = int(positions[b, t])
            if not 0 <= p < block_table.shape[1] * size:
                raise ValueError(f"positions[{b}, {t}] out of range")
            block = int(block_table[0, p // size])
            if not 0 <= block < cache.shape[0]:
                raise ValueError(f"block_table entry {block} is not a block")
            out[b, t] = cache[block, p % size]
    return out
