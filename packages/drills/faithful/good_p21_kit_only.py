"""A stranger's P21 from the kit's words alone: each position's table column gathered, the
physical blocks it reads checked (the kit's one rejection: invalid entries), then one
advanced-indexing read of the pool; nothing else validated."""

VARIABLE = "DRILL_P21_MODULE"


def paged_lookup(cache, block_table, positions):
    num_blocks, block_size = cache.shape[0], cache.shape[1]
    blocks = block_table.long().gather(1, positions.long() // block_size)
    if ((blocks < 0) | (blocks >= num_blocks)).any():
        raise ValueError(
            f"positions read through block_table entries outside [0, {num_blocks}): "
            f"{blocks.tolist()}"
        )
    return cache[blocks, positions.long() % block_size]
