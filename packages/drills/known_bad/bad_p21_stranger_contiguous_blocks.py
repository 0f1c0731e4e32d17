"""A stranger's lookup reads the row's first table entry and assumes its blocks follow it
contiguously in the pool (slot = table[b, 0] * block_size + p)."""

VARIABLE = "DRILL_P21_MODULE"
EXPECTED_OWNER = "p21"


def paged_lookup(cache, block_table, positions):
    if cache.dim() != 4 or block_table.dim() != 2 or positions.dim() != 2:
        raise ValueError("cache must be 4-D, block_table and positions 2-D")
    if block_table.is_floating_point() or positions.is_floating_point():
        raise ValueError("block_table and positions must be integer tensors")
    if positions.shape[0] != block_table.shape[0]:
        raise ValueError("positions and block_table disagree on the batch size")
    blocks, size = cache.shape[0], cache.shape[1]
    if bool(((positions < 0) | (positions >= block_table.shape[1] * size)).any()):
        raise ValueError("positions outside the block table")
    if bool(((block_table < 0) | (block_table >= blocks)).any()):
        raise ValueError("block_table entry outside the cache")
    flat = cache.reshape(blocks * size, *cache.shape[2:])
    slots = block_table[:, :1].long() * size + positions.long()  # [B, T]
    return flat[slots.clamp(max=blocks * size - 1)]
