"""PT35 reference: the supplied decode loop (artifacts/pt35_start.py), repaired for the profiler.

The start loop grows its K/V cache with torch.cat every step, copies the whole cache through
transpose(...).contiguous() every step, and logs a score with .item() (a device-to-host sync)
every step. The repair keeps the same math over a cache of fixed capacity that the caller
allocates once: the step's keys and values are written into slots filled .. filled+T-1 of
that storage, and step t attends over the first filled+t+1 slots through a view (no copy,
no host sync, no new cache).

    out[b, t, h] = softmax(q · K[b, h, :p+1]^T / sqrt(D)) @ V[b, h, :p+1],  p = filled + t

Shapes: queries, keys, values [B, T, H, D]; k_cache, v_cache [B, H, C, D] (same dtype and
device; C is the capacity) -> out [B, T, H, D], new memory. A call that would pass the
capacity (filled + T > C) or names a negative `filled` is rejected before any write.
"""

from __future__ import annotations

import math

from torch import Tensor

from ._describe import described


def fixed_cache_decode(
    queries: Tensor, keys: Tensor, values: Tensor, k_cache: Tensor, v_cache: Tensor, filled: int = 0
) -> Tensor:
    """Write the T new keys/values at slots filled.., then decode T steps over the cache."""
    _check_kinds(queries, keys, values, k_cache, v_cache)
    _check_capacity(filled, steps=queries.shape[1], capacity=k_cache.shape[2])
    end = filled + queries.shape[1]
    k_cache[:, :, filled:end] = keys.transpose(1, 2)  # into the caller's storage, in place
    v_cache[:, :, filled:end] = values.transpose(1, 2)
    return _attend_step_by_step(queries, k_cache, v_cache, filled)


def _attend_step_by_step(queries: Tensor, k_cache: Tensor, v_cache: Tensor, filled: int) -> Tensor:
    """Step t sees slots 0..filled+t only: later slots hold the future (or stale bytes)."""
    out = queries.new_empty(queries.shape)
    scale = 1.0 / math.sqrt(queries.shape[-1])
    for t in range(queries.shape[1]):
        length = filled + t + 1
        query = queries[:, t].unsqueeze(2)  # [B, H, 1, D], a view
        scores = query @ k_cache[:, :, :length].transpose(2, 3) * scale
        out[:, t] = (scores.softmax(-1) @ v_cache[:, :, :length]).squeeze(2)
    return out


def _check_kinds(
    queries: Tensor, keys: Tensor, values: Tensor, k_cache: Tensor, v_cache: Tensor
) -> None:
    """Every tensor, shape, dtype and device, before anything is written."""
    steps = {"queries": queries, "keys": keys, "values": values}
    if not isinstance(queries, Tensor) or queries.dim() != 4 or not queries.is_floating_point():
        raise ValueError(f"queries must be a float [B, T, H, D] tensor, got {described(queries)}")
    B, _, H, D = queries.shape
    for name, tensor in steps.items():
        if not isinstance(tensor, Tensor) or tensor.shape != queries.shape:
            raise ValueError(
                f"{name} must match queries {tuple(queries.shape)}, got {described(tensor)}"
            )
    for name, cache in (("k_cache", k_cache), ("v_cache", v_cache)):
        if not isinstance(cache, Tensor) or cache.dim() != 4 or _heads_of(cache) != (B, H, D):
            raise ValueError(f"{name} must be [B={B}, H={H}, C, D={D}], got {described(cache)}")
    if v_cache.shape != k_cache.shape:
        raise ValueError(
            f"v_cache must match k_cache {tuple(k_cache.shape)}, got {described(v_cache)}"
        )
    for name, tensor in {**steps, "k_cache": k_cache, "v_cache": v_cache}.items():
        if tensor.dtype != queries.dtype or tensor.device != queries.device:
            raise ValueError(
                f"{name} must be {queries.dtype} on {queries.device}, got {described(tensor)}"
            )


def _heads_of(cache: Tensor) -> tuple[int, int, int]:
    return cache.shape[0], cache.shape[1], cache.shape[3]


def _check_capacity(filled: object, steps: int, capacity: int) -> None:
    """0 <= filled and filled + steps <= capacity: a bad capacity changes nothing."""
    if isinstance(filled, bool) or not isinstance(filled, int):
        raise ValueError(f"filled must be an int, got {described(filled)}")
    if filled < 0:
        raise ValueError(f"filled must be >= 0, got {filled}")
    if filled + steps > capacity:
        raise ValueError(
            f"filled + steps = {filled} + {steps} passes the cache capacity {capacity}"
        )


__all__ = ["fixed_cache_decode"]
