"""A stranger's PT10 from the kit's row alone: chunk() instead of narrow, the checks in another
order (shape before dtype), TypeError for a dtype mismatch, an overlap found by comparing
the two tensors' element addresses in float64-free integer sets, one copy_ under no_grad."""

import torch

VARIABLE = "DRILL_PT10_MODULE"


def _addresses(t):
    index = torch.zeros((), dtype=torch.long)
    for stride, size in zip(t.stride(), t.shape):
        index = index.unsqueeze(-1) + torch.arange(size) * stride
    base = t.untyped_storage().data_ptr() + t.storage_offset() * t.element_size()
    return set((index.flatten() * t.element_size() + base).tolist())


def load_linear_shard_(target, source, axis, rank, world_size):
    if source.shape[axis] % world_size != 0:
        raise ValueError(f"world_size {world_size} does not divide source.shape[{axis}]")
    shard = torch.chunk(source, world_size, dim=axis)[rank]
    if target.shape != shard.shape:
        raise ValueError(f"target shape {tuple(target.shape)} != shard {tuple(shard.shape)}")
    if target.dtype != source.dtype:
        raise TypeError(f"target dtype {target.dtype} != source dtype {source.dtype}")
    mine = _addresses(target)
    if len(mine) < target.numel() or mine & _addresses(source):
        raise ValueError("target: overlapping writes")
    with torch.no_grad():
        target.copy_(shard)
