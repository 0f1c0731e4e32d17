"""P19 single-token decode attention over padded-capacity caches.

One new query token per row attends over the first `lengths[b]` slots of that row's
preallocated cache; slots at or past the length are capacity, not context, and never
participate. Nothing is concatenated and no input is written: the cache's owner
(P20's append) wrote the new token's K/V before this call.

Shapes: q [B, Hq, 1, D]; k_cache, v_cache [B, Hkv, S, D]; lengths [B] (1 <= len <= S).
Query head h reads kv head h // (Hq // Hkv) (grouped-query attention).
"""

from __future__ import annotations

import torch
from torch import Tensor

from ._describe import described


def decode_attention(q: Tensor, k_cache: Tensor, v_cache: Tensor, lengths: Tensor) -> Tensor:
    """softmax(q k^T / sqrt(D)) v over each row's valid slots -> [B, Hq, 1, D] (q's dtype)."""
    _check(q, k_cache, v_cache, lengths)
    B, Hq, _, D = q.shape
    Hkv, S = k_cache.shape[1], k_cache.shape[2]
    group = Hq // Hkv
    # [B, Hkv, group, D]: the query heads that share one kv head sit together, so one
    # matmul per kv head serves the whole group without repeating K or V.
    grouped = q.reshape(B, Hkv, group, D).float()
    scores = grouped @ k_cache.float().transpose(-1, -2) * D**-0.5  # [B, Hkv, group, S]
    slots = torch.arange(S, device=q.device)
    padding = slots[None, :] >= lengths[:, None]  # [B, S]: capacity, not context
    scores = scores.masked_fill(padding[:, None, None, :], float("-inf"))
    # fp32 softmax: half-precision logits would lose the max-subtraction's headroom.
    weights = torch.softmax(scores, dim=-1)
    # Zero the capacity too: a weight of 0 times a NaN or inf left there would still be NaN.
    values = v_cache.float().masked_fill(padding[:, None, :, None], 0.0)
    out = weights @ values  # [B, Hkv, group, D]
    return out.reshape(B, Hq, 1, D).to(q.dtype)


def _check(q: Tensor, k_cache: Tensor, v_cache: Tensor, lengths: Tensor) -> None:
    """Reject bad shapes, dtypes, devices and lengths before any arithmetic."""
    for name, tensor in (("q", q), ("k_cache", k_cache), ("v_cache", v_cache)):
        if not isinstance(tensor, Tensor) or tensor.dim() != 4:
            raise ValueError(f"{name} must be a 4-D tensor, got {described(tensor)}")
        if not tensor.is_floating_point():
            raise TypeError(f"{name} must be floating point, got {tensor.dtype}")
    if not isinstance(lengths, Tensor) or lengths.dim() != 1:
        raise ValueError(f"lengths must be a 1-D tensor, got {described(lengths)}")
    for name, tensor in (
        ("q", q),
        ("k_cache", k_cache),
        ("v_cache", v_cache),
        ("lengths", lengths),
    ):
        if tensor.device.type == "meta":  # no values: lengths could not be checked
            raise ValueError(f"{name} is a meta tensor")
    if lengths.dtype not in (torch.int32, torch.int64):
        raise TypeError(f"lengths must be int32 or int64, got {lengths.dtype}")
    B, Hq, T, D = q.shape
    if T != 1:
        raise ValueError(f"q must hold one token per row ([B, Hq, 1, D]), got {tuple(q.shape)}")
    if k_cache.shape != v_cache.shape:
        raise ValueError(
            f"k_cache {tuple(k_cache.shape)} and v_cache {tuple(v_cache.shape)} differ in shape"
        )
    if k_cache.shape[0] != B or k_cache.shape[3] != D:
        raise ValueError(f"k_cache {tuple(k_cache.shape)} does not match q {tuple(q.shape)}")
    Hkv, S = k_cache.shape[1], k_cache.shape[2]
    if Hkv == 0 or Hq % Hkv:
        raise ValueError(f"q's {Hq} heads are not a multiple of k_cache's {Hkv} heads")
    if lengths.shape != (B,):
        raise ValueError(f"lengths must have shape [{B}], got {tuple(lengths.shape)}")
    devices = {t.device for t in (q, k_cache, v_cache, lengths)}
    if len(devices) != 1:
        raise ValueError(f"q, k_cache, v_cache and lengths must share a device, got {devices}")
    if q.dtype != k_cache.dtype or k_cache.dtype != v_cache.dtype:
        raise TypeError(
            f"q, k_cache and v_cache dtypes differ: {q.dtype}, {k_cache.dtype}, {v_cache.dtype}"
        )
    bad = ((lengths < 1) | (lengths > S)).nonzero().flatten().tolist()
    if bad:
        row = bad[0]
        raise ValueError(
            f"lengths[{row}] = {int(lengths[row])} is outside 1..{S} (the cache capacity)"
        )


__all__ = ["decode_attention"]
