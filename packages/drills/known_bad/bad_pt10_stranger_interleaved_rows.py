"""A stranger's loader that deals rows round-robin (rank r takes every world_size-th row or
column from r): right shapes, every value somewhere, but not the contiguous slice the ranks
reassemble."""

import torch

VARIABLE = "DRILL_PT10_MODULE"
EXPECTED_OWNER = "pt10"


def load_linear_shard_(target, source, axis, rank, world_size):
    if source.shape[axis] % world_size:
        raise ValueError(f"source dim {axis} does not split over world_size {world_size}")
    index = torch.arange(rank, source.shape[axis], world_size, device=source.device)
    shard = source.index_select(axis, index)
    if target.shape != shard.shape:
        raise ValueError(f"target shape {tuple(target.shape)} is not the shard's")
    if target.dtype != source.dtype:
        raise ValueError("target and source dtypes differ")
    if target.untyped_storage().data_ptr() == source.untyped_storage().data_ptr():
        raise ValueError("target overlaps source")
    if 0 in target.stride():
        raise ValueError("target overlaps itself")
    with torch.no_grad():
        target.copy_(shard)
