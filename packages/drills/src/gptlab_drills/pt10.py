"""PT10 shard-aware linear loader (transfer case; owner M04).

load_linear_shard_(target, source, axis, rank, world_size) copies rank `rank`'s equal slice
of a full checkpoint tensor into that rank's local Parameter:

    local = source.shape[axis] // world_size
    target[...] = source.narrow(axis, rank * local, local)

axis 0 shards rows (output features: a column-parallel linear), axis 1 shards columns
(input features: a row-parallel linear). Strict: the sharded dim must divide evenly, the
target must already have the shard's shape and the source's dtype, and the write must
not overlap itself (an expanded target) or the source. The copy is in place under
no_grad: the Parameter object, its storage and its requires_grad are kept, and autograd
records nothing. Returns None; the source is only read.

Shapes: source [out, in] (any rank accepted); target = source's shape with dim `axis`
divided by world_size; 0 <= rank < world_size.
"""

from __future__ import annotations

import torch
from torch import Tensor

from ._describe import described


def load_linear_shard_(
    target: Tensor, source: Tensor, axis: int, rank: int, world_size: int
) -> None:
    """target <- rank's slice of source along axis (in place, no autograd)."""
    _check_kinds(target, source, axis, rank, world_size)
    local = source.shape[axis] // world_size
    shard = source.narrow(axis, rank * local, local)
    if tuple(target.shape) != tuple(shard.shape):
        raise ValueError(f"target has shape {tuple(target.shape)}, the shard {tuple(shard.shape)}")
    if _overlaps_itself(target) or _overlap(target, source):
        raise ValueError("target overlaps itself or the source: the write would clobber values")
    with torch.no_grad():
        target.copy_(shard)


def _check_kinds(target: Tensor, source: Tensor, axis: int, rank: int, world_size: int) -> None:
    for name, value in (("target", target), ("source", source)):
        if not isinstance(value, Tensor):
            raise ValueError(f"{name} must be a tensor, got {described(value)}")
    for name, number in (("axis", axis), ("rank", rank), ("world_size", world_size)):
        if isinstance(number, bool) or not isinstance(number, int):
            raise ValueError(f"{name} must be an int, got {described(number)}")
    if not 0 <= axis < source.dim():
        raise ValueError(f"axis {axis} is not a dim of source {tuple(source.shape)}")
    if world_size < 1 or not 0 <= rank < world_size:
        raise ValueError(f"rank {rank} is outside world_size {world_size}")
    if source.shape[axis] % world_size:
        raise ValueError(f"source dim {axis} does not split over world_size {world_size}")
    if target.dtype != source.dtype:
        raise ValueError(f"target is {target.dtype}, source {source.dtype}")


def _overlaps_itself(t: Tensor) -> bool:
    """Two elements at one address: each dim's stride must pass every smaller dim's reach."""
    reach = 0
    for stride, size in sorted((s, n) for s, n in zip(t.stride(), t.shape, strict=True) if n > 1):
        if stride <= reach:
            return True
        reach += stride * (size - 1)
    return False


def _overlap(first: Tensor, second: Tensor) -> bool:
    """Do the two tensors' byte ranges meet in one storage?"""
    if first.numel() == 0 or second.numel() == 0:
        return False
    if first.untyped_storage().data_ptr() != second.untyped_storage().data_ptr():
        return False
    return _span(first)[0] < _span(second)[1] and _span(second)[0] < _span(first)[1]


def _span(t: Tensor) -> tuple[int, int]:
    size = t.element_size()
    start = int(t.storage_offset()) * size
    last = sum(int(s) * (int(n) - 1) for s, n in zip(t.stride(), t.shape, strict=True)) * size
    return start, start + last + size


__all__ = ["load_linear_shard_"]
