"""PT16 cached encoder cross-attention, one decode step (transfer case; owner P18).

Each decoder query head attends over its row's cached encoder keys, the first
encoder_lengths[b] of them (the rest of the cache is padding):

    out[b, h] = softmax(q[b, h] . K[b, h // G, :len_b] / sqrt(D)) @ V[b, h // G, :len_b]

with G = Hq // Hkv query heads per K/V head (GQA: query heads are grouped, never K/V
repeated in memory). No causal mask: every encoder token is visible. A row with no
encoder token (len_b = 0) gets an explicit zero output, never NaN. No dropout: this is
inference, the weights are exact (an SDPA call would pass dropout_p=0.0). Worked in fp32
or wider; the output has q's dtype. The cache is only read.

Shapes: q [B, Hq, D]; encoder_k, encoder_v [B, Hkv, Te, D] (any strides);
encoder_lengths [B] int32/int64 in [0, Te] -> [B, Hq, D].
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from ._describe import described


def cross_attention_decode(
    q: Tensor, encoder_k: Tensor, encoder_v: Tensor, encoder_lengths: Tensor
) -> Tensor:
    """[B, Hq, D]: each query head's attention over its row's first encoder_lengths keys."""
    _check(q, encoder_k, encoder_v, encoder_lengths)
    B, Hq, D = q.shape
    Hkv, Te = encoder_k.shape[1], encoder_k.shape[2]
    work = torch.promote_types(q.dtype, torch.float32)
    grouped = q.to(work).reshape(B, Hkv, Hq // Hkv, D)  # head h reads K/V head h // G
    scores = torch.einsum("bkgd,bktd->bkgt", grouped, encoder_k.to(work)) / math.sqrt(D)
    keys = torch.arange(Te, device=q.device) < encoder_lengths[:, None]  # [B, Te]
    scores = scores.masked_fill(~keys[:, None, None, :], -torch.inf)
    weights = torch.where(keys.any(1)[:, None, None, None], scores.softmax(-1), 0.0)
    out = torch.einsum("bkgt,bktd->bkgd", weights, encoder_v.to(work))
    return out.reshape(B, Hq, D).to(q.dtype)


def _check(q: Tensor, encoder_k: Tensor, encoder_v: Tensor, encoder_lengths: Tensor) -> None:
    """Reject kinds, mismatched shapes, bad head ratios and lengths before any work."""
    for name, t in (("q", q), ("encoder_k", encoder_k), ("encoder_v", encoder_v)):
        if not isinstance(t, Tensor) or not t.is_floating_point():
            raise ValueError(f"{name} must be a floating tensor, got {described(t)}")
    if q.dim() != 3 or encoder_k.dim() != 4:
        raise ValueError(f"q must be [B, Hq, D] and encoder_k [B, Hkv, Te, D], got "
                         f"{tuple(q.shape)} and {tuple(encoder_k.shape)}")  # fmt: skip
    if encoder_k.device != q.device or encoder_v.device != q.device:
        raise ValueError(f"encoder_k and encoder_v must be on q's device {q.device}")
    if encoder_v.shape != encoder_k.shape:
        raise ValueError(
            f"encoder_v {tuple(encoder_v.shape)} != encoder_k {tuple(encoder_k.shape)}"
        )
    B, Hq, D = q.shape
    Hkv = encoder_k.shape[1]
    if encoder_k.shape[0] != B or encoder_k.shape[3] != D or Hkv == 0 or Hq % Hkv != 0:
        raise ValueError(f"q {tuple(q.shape)} needs encoder_k [B, Hkv, Te, D] with Hq % Hkv == 0, "
                         f"got {tuple(encoder_k.shape)}")  # fmt: skip
    lengths = encoder_lengths
    if not isinstance(lengths, Tensor) or lengths.dtype not in (torch.int32, torch.int64):
        raise ValueError(f"encoder_lengths must be an int tensor, got {described(lengths)}")
    if lengths.shape != (B,) or lengths.device != q.device:
        raise ValueError(f"encoder_lengths must have shape [{B}] on q's device")
    if bool(((lengths < 0) | (lengths > encoder_k.shape[2])).any()):
        raise ValueError(f"encoder_lengths must lie in [0, Te], got {lengths.tolist()}")


__all__ = ["cross_attention_decode"]
