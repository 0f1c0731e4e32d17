"""PT20 varlen block-diagonal attention (transfer case; owner M04).

B sequences are packed back to back along one token axis; cu_seqlens[b] .. cu_seqlens[b+1]
are sequence b's rows (the same offsets for queries and keys: self-attention). A query
attends only keys of its own sequence at or before it, so the score matrix is block
diagonal with a causal triangle per block:

    out[n, h] = softmax_j(scale * q[n, h] . k[j, h // g])  over j in seq(n), j <= n   (· v)

with g = Hq / Hkv query heads per K/V head (GQA) and scale = 1/sqrt(D) unless given. Row n of
the output is query row n: the packed order is the output's order. Scores in fp32.
This reference builds the whole [N, N] mask: a varlen kernel instead walks cu_seqlens
(and needs max_seqlen to size its tiles) without ever forming it.

Shapes: q [N, Hq, D]; k, v [N, Hkv, D]; cu_seqlens [B + 1] int (0 first, N last,
nondecreasing; repeats are empty sequences); scale a float or None -> [N, Hq, D] (q's dtype).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from ._describe import described


def varlen_attention(
    q: Tensor, k: Tensor, v: Tensor, cu_seqlens: Tensor, scale: float | None = None
) -> Tensor:
    """Causal attention within each packed sequence -> [N, Hq, D]."""
    _check(q, k, v, cu_seqlens, scale)
    N, Hq, D = q.shape
    group = Hq // k.shape[1]
    keys = k.float().repeat_interleave(group, dim=1).transpose(0, 1)  # [Hq, N, D]
    values = v.float().repeat_interleave(group, dim=1).transpose(0, 1)
    queries = q.float().transpose(0, 1)  # [Hq, N, D]
    factor = 1.0 / math.sqrt(D) if scale is None else scale
    scores = factor * queries @ keys.transpose(1, 2)  # [Hq, N, N]
    scores = scores.masked_fill(~block_causal_mask(cu_seqlens, N), float("-inf"))
    out = scores.softmax(dim=-1) @ values  # [Hq, N, D]
    return out.transpose(0, 1).to(q.dtype)


def block_causal_mask(cu_seqlens: Tensor, N: int) -> Tensor:
    """[N, N] bool: key j is in query n's sequence and j <= n (every row has its diagonal)."""
    lengths = (cu_seqlens[1:] - cu_seqlens[:-1]).long()
    sequence = torch.repeat_interleave(
        torch.arange(len(lengths), device=cu_seqlens.device), lengths
    )
    rows = torch.arange(N, device=cu_seqlens.device)
    return (sequence[:, None] == sequence[None, :]) & (rows[None, :] <= rows[:, None])


def _check(q: Tensor, k: Tensor, v: Tensor, cu_seqlens: Tensor, scale: float | None) -> None:
    for name, tensor in (("q", q), ("k", k), ("v", v)):
        if not isinstance(tensor, Tensor) or tensor.dim() != 3 or not tensor.is_floating_point():
            raise ValueError(
                f"{name} must be a 3-D float tensor [N, H, D], got {described(tensor)}"
            )
    if k.shape != v.shape or k.shape[0] != q.shape[0] or k.shape[2] != q.shape[2]:
        raise ValueError(
            f"k and v must be [N, Hkv, D] beside q {tuple(q.shape)}, got {tuple(k.shape)}"
        )
    if k.shape[1] == 0 or q.shape[1] % k.shape[1] != 0:
        raise ValueError(f"q's {q.shape[1]} heads are not a multiple of k's {k.shape[1]}")
    if scale is not None and (
        isinstance(scale, bool) or not isinstance(scale, (int, float)) or not math.isfinite(scale)
    ):
        raise ValueError(f"scale must be a finite float or None, got {scale!r}")
    if not isinstance(cu_seqlens, Tensor) or cu_seqlens.dtype not in (torch.int32, torch.int64):
        raise ValueError(f"cu_seqlens must be an int32/int64 tensor, got {described(cu_seqlens)}")
    N = q.shape[0]
    if (
        cu_seqlens.dim() != 1
        or cu_seqlens.numel() == 0
        or int(cu_seqlens[0]) != 0
        or int(cu_seqlens[-1]) != N
    ):
        raise ValueError(f"cu_seqlens must run from 0 to N={N}, got {cu_seqlens.tolist()}")
    if bool((cu_seqlens[1:] < cu_seqlens[:-1]).any()):
        raise ValueError(f"cu_seqlens must never decrease, got {cu_seqlens.tolist()}")


__all__ = ["block_causal_mask", "varlen_attention"]
