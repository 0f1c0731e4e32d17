"""P20 in-place K/V append into preallocated caches.

Row b's new token t goes to slot `positions[b, t]` of that row's cache, in place: the
caches keep their storage (data pointers), so every view a decoder holds sees the write,
and nothing is reallocated per step. Every check runs before the first write, so a
rejected call leaves both caches exactly as they were.

Shapes: k_cache, v_cache [B, Hkv, S, D]; k_new, v_new [B, Hkv, T, D];
positions [B, T] int64, row-local slots in 0..S-1, distinct within a row (T may be 0).
"""

from __future__ import annotations

import torch
from torch import Tensor

from ._describe import described


def append_kv_cache(
    k_cache: Tensor, v_cache: Tensor, k_new: Tensor, v_new: Tensor, positions: Tensor
) -> None:
    """k_cache[b, :, positions[b, t]] = k_new[b, :, t] (likewise v), in place."""
    _check(k_cache, v_cache, k_new, v_new, positions)
    B, H, T, D = k_new.shape
    # A broadcast view of the [B, T] table, not a copy: scatter_ wants an index per element.
    index = positions[:, None, :, None].expand(B, H, T, D)
    k_cache.scatter_(2, index, k_new)
    v_cache.scatter_(2, index, v_new)


def _check(
    k_cache: Tensor, v_cache: Tensor, k_new: Tensor, v_new: Tensor, positions: Tensor
) -> None:
    """Reject bad shapes, dtypes, devices and positions before anything is written."""
    named = (("k_cache", k_cache), ("v_cache", v_cache), ("k_new", k_new), ("v_new", v_new))
    for name, tensor in named:
        if not isinstance(tensor, Tensor) or tensor.dim() != 4:
            raise ValueError(f"{name} must be a 4-D tensor, got {described(tensor)}")
    if not isinstance(positions, Tensor) or positions.dim() != 2:
        raise ValueError(f"positions must be a [B, T] tensor, got {described(positions)}")
    if positions.dtype != torch.int64:
        raise ValueError(f"positions must be int64, got {positions.dtype}")
    if v_cache.shape != k_cache.shape:
        raise ValueError(
            f"v_cache {tuple(v_cache.shape)} differs from k_cache {tuple(k_cache.shape)}"
        )
    B, H, S, D = k_cache.shape
    T = positions.shape[1]
    if positions.shape[0] != B:
        raise ValueError(f"positions must have {B} rows, got {tuple(positions.shape)}")
    for name, new in (("k_new", k_new), ("v_new", v_new)):
        if new.shape != (B, H, T, D):
            raise ValueError(f"{name} must have shape {(B, H, T, D)}, got {tuple(new.shape)}")
        if new.dtype != k_cache.dtype:
            raise ValueError(f"{name} is {new.dtype} but the caches are {k_cache.dtype}")
    if v_cache.dtype != k_cache.dtype:
        raise ValueError(f"v_cache is {v_cache.dtype} but k_cache is {k_cache.dtype}")
    devices = {t.device for _, t in named} | {positions.device}
    if len(devices) != 1:
        raise ValueError(f"k_cache, v_cache, k_new, v_new and positions span devices {devices}")
    if T == 0:
        return
    outside = ((positions < 0) | (positions >= S)).nonzero()
    if len(outside):
        b, t = outside[0].tolist()
        raise ValueError(f"positions[{b}, {t}] = {int(positions[b, t])} is outside 0..{S - 1}")
    # Two writes to one slot would leave whichever scatter_ happened to apply last.
    ordered = positions.sort(dim=1).values
    repeated = (ordered[:, 1:] == ordered[:, :-1]).any(dim=1).nonzero().flatten().tolist()
    if repeated:
        raise ValueError(
            f"positions repeat a slot in row {repeated[0]}: {positions[repeated[0]].tolist()}"
        )


__all__ = ["append_kv_cache"]
