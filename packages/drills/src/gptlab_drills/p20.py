"""P20 in-place K/V append into preallocated caches.

Row b's new token t, at absolute position `positions[b, t]`, goes to slot
`positions[b, t] - start[b]` of that row's cache (start defaults to 0: position = slot),
in place: the caches keep their storage (data pointers), so every view a decoder holds
sees the write. Every check, of both caches, runs before the first write, so a rejected
call leaves both caches exactly as they were.

Shapes: k_cache, v_cache [B, Hkv, S, D]; k_new, v_new [B, Hkv, T, D]; positions [B, T]
int64 (T may be 0); start [B] int64; slots in 0..S-1, distinct within a row.
"""

from __future__ import annotations

import torch
from torch import Tensor

from ._describe import described


def append_kv_cache(
    k_cache: Tensor,
    v_cache: Tensor,
    k_new: Tensor,
    v_new: Tensor,
    positions: Tensor,
    *,
    start: Tensor | None = None,
) -> None:
    """k_cache[b, :, positions[b, t] - start[b]] = k_new[b, :, t] (likewise v), in place."""
    slots = _slots(k_cache, v_cache, k_new, v_new, positions, start)
    B, H, T, D = k_new.shape
    # A broadcast view of the [B, T] table, not a copy: scatter_ wants an index per element.
    index = slots[:, None, :, None].expand(B, H, T, D)
    k_cache.scatter_(2, index, k_new)
    v_cache.scatter_(2, index, v_new)


def _slots(
    k_cache: Tensor, v_cache: Tensor, k_new: Tensor, v_new: Tensor, positions: Tensor, start: object
) -> Tensor:
    """Every check before anything is written; returns the [B, T] slot table."""
    named = (("k_cache", k_cache), ("v_cache", v_cache), ("k_new", k_new), ("v_new", v_new))
    for name, tensor in (*named, ("positions", positions), ("start", start)):
        if name == "start" and tensor is None:
            continue
        if not isinstance(tensor, Tensor) or tensor.device.type == "meta":
            raise TypeError(f"{name} must be a tensor with values, got {described(tensor)}")
        if tensor.dim() != {"positions": 2, "start": 1}.get(name, 4):
            raise ValueError(f"{name} has the wrong number of dims: {described(tensor)}")
        if name in ("positions", "start") and tensor.dtype != torch.int64:
            raise TypeError(f"{name} must be int64, got {tensor.dtype}")
    for name, cache in named[:2]:  # would an in-place write fail half-way?
        if any(st == 0 and n > 1 for st, n in zip(cache.stride(), cache.shape, strict=True)):
            raise ValueError(f"{name} is an expanded view (slots share memory)")
        if cache.requires_grad or (cache.is_inference() and not torch.is_inference_mode_enabled()):
            raise ValueError(
                f"{name} cannot be written in place here (requires grad, or inference)"
            )
    if v_cache.shape != k_cache.shape or v_cache.dtype != k_cache.dtype:
        raise ValueError(f"v_cache {described(v_cache)} differs from k_cache {described(k_cache)}")
    B, H, S, D = k_cache.shape
    T = positions.shape[1]
    if positions.shape[0] != B or (isinstance(start, Tensor) and start.shape != (B,)):
        raise ValueError(f"positions {described(positions)} and start need {B} rows")
    for name, new in named[2:]:
        if new.shape != (B, H, T, D):
            raise ValueError(f"{name} must have shape {(B, H, T, D)}, got {tuple(new.shape)}")
        if new.dtype != k_cache.dtype:
            raise TypeError(f"{name} is {new.dtype} but the caches are {k_cache.dtype}")
    tables = (positions, start) if isinstance(start, Tensor) else (positions,)
    if len({t.device for t in (k_cache, v_cache, k_new, v_new, *tables)}) != 1:
        raise ValueError("k_cache, v_cache, k_new, v_new, positions and start span devices")
    slots = positions if not isinstance(start, Tensor) else positions - start[:, None]
    outside = ((slots < 0) | (slots >= S)).nonzero().tolist()
    if outside:
        b, t = outside[0]
        raise ValueError(f"positions[{b}, {t}] = {int(positions[b, t])} is outside the cache")
    # Two writes to one slot would leave whichever scatter_ happened to apply last.
    ordered = slots.sort(dim=1).values
    repeated = (ordered[:, 1:] == ordered[:, :-1]).any(dim=1).nonzero().flatten().tolist()
    if repeated:
        raise ValueError(f"positions repeat a slot in row {repeated[0]}")
    return slots


__all__ = ["append_kv_cache"]
