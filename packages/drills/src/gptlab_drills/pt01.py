"""PT01 batched window gather (transfer case; owner P06).

Each row b of x takes its own window of `width` consecutive time steps starting at
starts[b]:

    out[b, i, :] = x[b, starts[b] + i, :]        for 0 <= i < width

One advanced-indexing gather for the whole batch: a [B, 1] row index broadcast against a
[B, width] time index, so the only index built holds B * width entries and the result
(a copy, never a view of x) holds B * width * C. No Python loop over rows.

Shapes: x [B, T, C]; starts [B] int32/int64, each window inside [0, T); width an int >= 0
-> [B, width, C] (x's dtype and device).
"""

from __future__ import annotations

import torch
from torch import Tensor

from ._describe import described


def gather_windows(x: Tensor, starts: Tensor, width: int) -> Tensor:
    """out[b, i] = x[b, starts[b] + i] -> [B, width, C], a new tensor."""
    _check(x, starts, width)
    steps = starts.long()[:, None] + torch.arange(width, device=x.device)  # [B, width]
    rows = torch.arange(x.shape[0], device=x.device)[:, None]  # [B, 1], broadcast
    return x[rows, steps]


def _check(x: Tensor, starts: Tensor, width: int) -> None:
    """Reject kinds, shapes, devices and out-of-range windows before anything is read."""
    if not isinstance(x, Tensor) or x.dim() != 3:
        raise ValueError(f"x must be a 3-D tensor [B, T, C], got {described(x)}")
    if not isinstance(starts, Tensor) or starts.dtype not in (torch.int32, torch.int64):
        raise ValueError(f"starts must be an int32/int64 tensor, got {described(starts)}")
    if isinstance(width, bool) or not isinstance(width, int):
        raise ValueError(f"width must be an int, got {described(width)}")
    B, T, _ = x.shape
    if starts.shape != (B,):
        raise ValueError(f"starts must have shape [{B}], got {tuple(starts.shape)}")
    if starts.device != x.device:
        raise ValueError(f"starts is on {starts.device}, x on {x.device}")
    if width < 0:
        raise ValueError(f"width must be >= 0, got {width}")
    if bool((starts < 0).any()):
        raise ValueError(f"starts hold a negative start: {starts.tolist()}")
    if bool((starts > T - width).any()):
        raise ValueError(f"a window of width {width} from starts {starts.tolist()} passes T={T}")


__all__ = ["gather_windows"]
