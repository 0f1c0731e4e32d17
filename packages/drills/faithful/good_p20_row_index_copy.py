"""A stranger's P20 from the README contract alone: checks positions first (a set per row),
then one in-place index_copy_ per row and cache; returns the two caches. Slots are
positions minus the row's start; both caches' writability is checked before either write."""

import torch

VARIABLE = "DRILL_P20_MODULE"


def append_kv_cache(k_cache, v_cache, k_new, v_new, positions, *, start=None):
    for name, t in (("k_cache", k_cache), ("v_cache", v_cache), ("k_new", k_new), ("v_new", v_new)):
        if not isinstance(t, torch.Tensor) or t.is_meta:
            raise TypeError(f"{name} must be a tensor with values")
    if not isinstance(positions, torch.Tensor) or positions.ndim != 2:
        raise ValueError("positions must be a [B, T] integer tensor")
    if positions.dtype != torch.long:
        raise ValueError("positions must be int64")
    for name, c in (("k_cache", k_cache), ("v_cache", v_cache)):
        if c.requires_grad or (c.is_inference() and not torch.is_inference_mode_enabled()):
            raise ValueError(f"{name} cannot be written in place")
        if 0 in [st for st, n in zip(c.stride(), c.shape) if n > 1]:
            raise ValueError(f"{name} is an expanded view")
    batch, steps = positions.shape
    if k_cache.ndim != 4 or v_cache.shape != k_cache.shape:
        raise ValueError("k_cache and v_cache must be equal [B, H, S, D] tensors")
    b, h, s, d = k_cache.shape
    if batch != b:
        raise ValueError(f"positions has {batch} rows, the cache {b}")
    if start is None:
        start = torch.zeros(b, dtype=torch.long, device=positions.device)
    if not isinstance(start, torch.Tensor) or start.dtype != torch.long or start.shape != (b,):
        raise ValueError(f"start must be an int64 tensor of shape [{b}]")
    positions = positions - start[:, None]
    for name, new in (("k_new", k_new), ("v_new", v_new)):
        if tuple(new.shape) != (b, h, steps, d):
            raise ValueError(f"{name} must be [{b}, {h}, {steps}, {d}]")
        if new.dtype != k_cache.dtype or new.device != k_cache.device:
            raise ValueError(f"{name} must match the cache's dtype and device")
    if v_cache.dtype != k_cache.dtype:
        raise ValueError("v_cache dtype differs from k_cache")
    for row, slots in enumerate(positions.tolist()):
        if any(p < 0 or p >= s for p in slots):
            raise ValueError(f"positions row {row} leaves 0..{s - 1}")
        if len(set(slots)) != len(slots):
            raise ValueError(f"positions row {row} repeats a slot")
    for row in range(b):
        k_cache[row].index_copy_(1, positions[row], k_new[row])
        v_cache[row].index_copy_(1, positions[row], v_new[row])
    return k_cache, v_cache
