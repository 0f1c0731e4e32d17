"""A stranger's P21 that masks invalid entries instead of rejecting them (the kit allows
either): the pool flattened to one row per token, invalid physical blocks clamped for the
read, then their rows zeroed; nothing validated."""

import torch

VARIABLE = "DRILL_P21_MODULE"


def paged_lookup(cache, block_table, positions):
    num_blocks, block_size = cache.shape[0], cache.shape[1]
    blocks = block_table.long().gather(1, positions.long() // block_size)
    valid = (blocks >= 0) & (blocks < num_blocks)
    flat = blocks.clamp(0, num_blocks - 1) * block_size + positions.long() % block_size
    pool = cache.reshape(num_blocks * block_size, *cache.shape[2:])
    rows = pool.index_select(0, flat.reshape(-1)).reshape(*flat.shape, *cache.shape[2:])
    return torch.where(
        valid[..., None, None], rows, torch.zeros((), dtype=cache.dtype, device=cache.device)
    )
