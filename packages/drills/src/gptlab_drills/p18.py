"""P18 reference attention: scaled dot-product attention from matmuls, SDPA's semantics.

    out = softmax(q k^T * scale + mask, over the key axis) v,  scale = 1/sqrt(D) by default.

A boolean mask means True = may attend (blocked scores become -inf); a float mask is
added to the scores. `is_causal` lets query i see keys 0..i (top-left, as SDPA does, so
L == S is the usual triangle). No dropout: the function is deterministic. Half-precision
inputs are computed in fp32 and returned in their own dtype.

Shapes: q [B, Hq, L, D]; k [B, Hkv, S, D]; v [B, Hkv, S, Dv]; Hq % Hkv == 0, query head h
reads kv head h // (Hq // Hkv); attn_mask broadcastable to [B, Hq, L, S]. -> [B, Hq, L, Dv].
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from ._describe import described


def reference_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    attn_mask: Tensor | None = None,
    *,
    is_causal: bool = False,
    scale: float | None = None,
) -> Tensor:
    """softmax(q k^T * scale + mask) v over the key axis -> [B, Hq, L, Dv] in q's dtype."""
    _check(q, k, v, attn_mask)
    _check_options(is_causal, scale)
    Hq, L, D = q.shape[1:]
    Hkv, S = k.shape[1], k.shape[2]
    # GQA: each kv head serves Hq // Hkv neighbouring query heads (repeat, not tile).
    k = k.repeat_interleave(Hq // Hkv, dim=1)
    v = v.repeat_interleave(Hq // Hkv, dim=1)
    scale = D**-0.5 if scale is None else scale
    scores = q.float() @ k.float().transpose(-2, -1) * scale  # [B, Hq, L, S]
    if is_causal:
        causal = torch.ones(L, S, dtype=torch.bool, device=q.device).tril()
        scores = scores.masked_fill(~causal, float("-inf"))
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            scores = scores.masked_fill(~attn_mask, float("-inf"))
        else:
            scores = scores + attn_mask.float()
    # Normalise over keys (the last axis), in fp32: every query's weights sum to one.
    weights = torch.softmax(scores, dim=-1)
    return (weights @ v.float()).to(q.dtype)


def _check(q: Tensor, k: Tensor, v: Tensor, attn_mask: Tensor | None) -> None:
    """Reject shapes and dtypes that do not fit before any arithmetic."""
    for name, tensor in (("q", q), ("k", k), ("v", v)):
        if not isinstance(tensor, Tensor) or tensor.dim() != 4:
            raise ValueError(f"{name} must be a 4-D tensor, got {described(tensor)}")
        if not tensor.is_floating_point() or tensor.dtype != q.dtype:
            raise TypeError(f"{name} must be floating point like q, got {described(tensor)}")
    B, Hq, L, D = q.shape
    if k.shape[:3] != v.shape[:3]:
        raise ValueError(f"k {tuple(k.shape)} and v {tuple(v.shape)} differ in [B, Hkv, S]")
    if k.shape[0] != B or k.shape[3] != D:
        raise ValueError(f"k {tuple(k.shape)} does not fit q {tuple(q.shape)} (batch, head dim)")
    Hkv, S = k.shape[1], k.shape[2]
    if Hkv == 0 or Hq % Hkv:
        raise ValueError(f"q's {Hq} heads are not a multiple of k's {Hkv} heads")
    if attn_mask is None:
        return
    if not isinstance(attn_mask, Tensor) or not (
        attn_mask.dtype == torch.bool or attn_mask.is_floating_point()
    ):  # a 0/1 integer mask is neither "may attend" nor a bias: refuse to guess
        raise TypeError(f"attn_mask must be a bool or float tensor, got {described(attn_mask)}")
    target, sizes = (B, Hq, L, S), tuple(attn_mask.shape)
    # Broadcastable *to* the scores: aligned from the right, each size 1 or equal.
    fits = len(sizes) <= 4 and all(
        size in (1, want) for size, want in zip(reversed(sizes), reversed(target), strict=False)
    )
    if not fits:
        raise ValueError(f"attn_mask {sizes} does not broadcast to [B, Hq, L, S] {target}")


def _check_options(is_causal: bool, scale: float | None) -> None:
    if not isinstance(is_causal, bool):
        raise TypeError(f"is_causal must be a bool, got {described(is_causal)}")
    if scale is None:
        return
    if isinstance(scale, bool) or not isinstance(scale, int | float):
        raise TypeError(f"scale must be a number or None, got {described(scale)}")
    if not math.isfinite(scale):
        raise ValueError(f"scale must be finite, got {scale}")


__all__ = ["reference_attention"]
