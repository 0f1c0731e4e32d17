"""PT04 per-batch indexed select (transfer case; owner P06).

Each row b of x picks K of its own steps, in the order indices[b] lists them (repeats
allowed):

    out[b, k, ...] = x[b, indices[b, k], ...]

One advanced-indexing gather: a [B, 1] row index broadcast against the [B, K] step
index. Neither x nor an index is ever repeated or expanded over K (torch.gather would need
its index expanded over the feature dims; advanced indexing needs only [B, K]).

Shapes: x [B, T, *F] (any features, rank 2 and up), indices [B, K] int32/int64 in [0, T)
-> [B, K, *F] (x's dtype and device, a new tensor).
"""

from __future__ import annotations

import torch
from torch import Tensor

from ._describe import described


def batched_index_select(x: Tensor, indices: Tensor) -> Tensor:
    """out[b, k] = x[b, indices[b, k]] -> [B, K, *F]."""
    _check(x, indices)
    rows = torch.arange(x.shape[0], device=x.device)[:, None]  # [B, 1], broadcast over K
    return x[rows, indices.long()]


def _check(x: Tensor, indices: Tensor) -> None:
    """Reject kinds, shapes, devices and out-of-range steps before anything is read."""
    if not isinstance(x, Tensor) or x.dim() < 2:
        raise ValueError(f"x must be a tensor [B, T, *F] of rank 2 or more, got {described(x)}")
    if not isinstance(indices, Tensor) or indices.dtype not in (torch.int32, torch.int64):
        raise ValueError(f"indices must be an int32/int64 tensor, got {described(indices)}")
    if indices.dim() != 2 or indices.shape[0] != x.shape[0]:
        raise ValueError(f"indices must be [B={x.shape[0]}, K], got {tuple(indices.shape)}")
    if indices.device != x.device:
        raise ValueError(f"indices are on {indices.device}, x on {x.device}")
    outside = (indices < 0) | (indices >= x.shape[1])
    if bool(outside.any()):
        raise ValueError(f"indices {indices[outside].tolist()} are outside [0, T={x.shape[1]})")


__all__ = ["batched_index_select"]
