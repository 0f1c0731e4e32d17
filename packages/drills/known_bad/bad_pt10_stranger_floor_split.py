"""A stranger's loader that floors the split and never checks it: with 8 rows over 3 ranks each
takes 2 and the last 2 rows are silently dropped; nor does it look for overlapping memory."""

import torch

VARIABLE = "DRILL_PT10_MODULE"
EXPECTED_OWNER = "pt10"


def load_linear_shard_(target, source, axis, rank, world_size):
    local = source.shape[axis] // world_size
    shard = source.narrow(axis, rank * local, local)
    if target.shape != shard.shape:
        raise ValueError(f"target shape {tuple(target.shape)} is not the shard's")
    if target.dtype != source.dtype:
        raise ValueError("target and source dtypes differ")
    with torch.no_grad():
        target.copy_(shard)
