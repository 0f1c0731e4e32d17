"""A stranger's PT04 from the kit's words alone: the rejections the kit names (negative or
out-of-range indices, a batch mismatch), then torch.gather along time with the [B, K]
index expanded (a view) over the feature dims; nothing else validated."""

import torch

VARIABLE = "DRILL_PT04_MODULE"


def batched_index_select(x, indices):
    if indices.shape[0] != x.shape[0]:
        raise ValueError(f"indices hold {indices.shape[0]} rows, x {x.shape[0]}")
    if indices.numel() and (int(indices.min()) < 0 or int(indices.max()) >= x.shape[1]):
        raise ValueError(f"indices must lie in [0, {x.shape[1]})")
    features = x.shape[2:]
    index = indices.long().reshape(*indices.shape, *([1] * len(features)))
    index = index.expand(*indices.shape, *features)  # [B, K, *F], a view
    return torch.gather(x, 1, index)
