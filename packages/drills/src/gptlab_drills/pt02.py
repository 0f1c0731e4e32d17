"""PT02 pack and restore valid tokens (transfer case; owner M04).

A right-padded batch x [B, T, C] holds lengths[b] valid tokens in row b. Packing keeps
only those, row after row and in time order within a row (what a flat-token runtime
feeds its model), with each token's coordinates:

    flat[n] = x[row_ids[n], col_ids[n]],  N = sum(lengths)

Restoring scatters flat rows back to their coordinates in a new [batch, time, C] tensor
whose every other entry is `fill`. Both are one mask or one scatter for the whole batch.

Shapes: x [B, T, C], lengths [B] int32/int64 in [0, T] -> flat [N, C], row_ids [N],
col_ids [N] (int64). flat [N, C], row_ids [N], col_ids [N], batch, time, fill
-> [batch, time, C] (flat's dtype and device).
"""

from __future__ import annotations

import torch
from torch import Tensor

from ._describe import described


def pack_valid(x: Tensor, lengths: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """(flat [N, C], row_ids [N], col_ids [N]) of the valid tokens, row-major."""
    _check_lengths(x, lengths)
    steps = torch.arange(x.shape[1], device=x.device)
    valid = steps[None, :] < lengths[:, None]  # [B, T]: nonzero() walks it row-major
    row_ids, col_ids = valid.nonzero(as_tuple=True)
    return x[row_ids, col_ids], row_ids, col_ids


def restore_valid(
    flat: Tensor, row_ids: Tensor, col_ids: Tensor, batch: int, time: int, fill: float
) -> Tensor:
    """[batch, time, C]: flat[n] at (row_ids[n], col_ids[n]), `fill` everywhere else."""
    _check_coordinates(flat, row_ids, col_ids, batch, time)
    out = flat.new_full((batch, time, flat.shape[1]), fill)
    out[row_ids, col_ids] = flat
    return out


def _check_lengths(x: Tensor, lengths: Tensor) -> None:
    if not isinstance(x, Tensor) or x.dim() != 3:
        raise ValueError(f"x must be a 3-D tensor [B, T, C], got {described(x)}")
    if not isinstance(lengths, Tensor) or lengths.dtype not in (torch.int32, torch.int64):
        raise ValueError(f"lengths must be an int32/int64 tensor, got {described(lengths)}")
    if lengths.shape != x.shape[:1] or lengths.device != x.device:
        raise ValueError(f"lengths must be [{x.shape[0]}] on {x.device}, got {lengths.shape}")
    if bool(((lengths < 0) | (lengths > x.shape[1])).any()):
        raise ValueError(f"lengths {lengths.tolist()} leave [0, {x.shape[1]}]")


def _check_coordinates(flat: Tensor, rows: Tensor, cols: Tensor, batch: int, time: int) -> None:
    if not isinstance(flat, Tensor) or flat.dim() != 2:
        raise ValueError(f"flat must be a 2-D tensor [N, C], got {described(flat)}")
    for name, ids, size, bound in (
        ("row_ids", rows, "batch", batch),
        ("col_ids", cols, "time", time),
    ):
        if not isinstance(ids, Tensor) or ids.is_floating_point() or ids.dtype == torch.bool:
            raise ValueError(f"{name} must be an integer tensor, got {described(ids)}")
        if isinstance(bound, bool) or not isinstance(bound, int) or bound < 0:
            raise ValueError(f"{size} must be an int >= 0, got {bound!r}")
        if ids.shape != flat.shape[:1] or bool(((ids < 0) | (ids >= bound)).any()):
            raise ValueError(f"{name} must be [{flat.shape[0]}] ids in [0, {size}={bound})")
    if len(set(zip(rows.tolist(), cols.tolist(), strict=True))) != rows.numel():
        raise ValueError("row_ids and col_ids repeat a coordinate")


__all__ = ["pack_valid", "restore_valid"]
