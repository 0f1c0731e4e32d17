"""PT19 sliding-window attention reference (transfer case; owner P18).

Decomposed causal attention where a query at absolute position p sees only the valid keys
whose positions lie in [p - window + 1, p]:

    allowed[b, i, j] = key_valid[b, j] and qpos[b, i] - window < kpos[b, j] <= qpos[b, i]
    out[b, h, i]     = softmax over allowed j of q[b, h, i] . k[b, h // G, j] / sqrt(D)
                       applied to v[b, h // G, j]

Positions, not column numbers, decide: a chunk of queries after a cache and left-padded
rows (padding keys marked invalid) need no special case. A query with no visible key
gets 0, never NaN. This reference builds the [B, Hq, Tq, Tk] scores densely and masks
them; a banded kernel needs only Tq x window scores per head.

Shapes: q [B, Hq, Tq, D]; k, v [B, Hkv, Tk, D], Hq % Hkv == 0; query_positions [B, Tq],
key_positions [B, Tk] integer; key_valid [B, Tk] bool; window an int >= 1
-> [B, Hq, Tq, D] in q's dtype. (The names and argument order are this project's.)
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from ._describe import described


def sliding_window_attention(
    q: Tensor, k: Tensor, v: Tensor,
    query_positions: Tensor, key_positions: Tensor, key_valid: Tensor, window: int,
) -> Tensor:  # fmt: skip
    """[B, Hq, Tq, D]: each query's attention over the valid keys of its last `window` positions."""
    _check(q, k, v, query_positions, key_positions, key_valid, window)
    B, Hq, Tq, D = q.shape
    Hkv = k.shape[1]
    qpos, kpos = query_positions[:, :, None], key_positions[:, None, :]
    allowed = key_valid[:, None, :] & (kpos <= qpos) & (kpos > qpos - window)  # [B, Tq, Tk]
    work = torch.promote_types(q.dtype, torch.float32)
    grouped = q.to(work).reshape(B, Hkv, Hq // Hkv, Tq, D)  # head h reads K/V head h // G
    scores = torch.einsum("bkgqd,bktd->bkgqt", grouped, k.to(work)) / math.sqrt(D)
    scores = scores.masked_fill(~allowed[:, None, None], -torch.inf)
    seen = allowed.any(-1)[:, None, None, :, None]  # a query with no key: 0, not NaN
    weights = torch.where(seen, scores.softmax(-1), 0.0)
    out = torch.einsum("bkgqt,bktd->bkgqd", weights, v.to(work))
    return out.reshape(B, Hq, Tq, D).to(q.dtype)


def _check(q: Tensor, k: Tensor, v: Tensor, qpos: Tensor, kpos: Tensor, valid: Tensor,
           window: int) -> None:  # fmt: skip
    """Reject the window, kinds and shapes before any work."""
    if isinstance(window, bool) or not isinstance(window, int):
        raise ValueError(f"window must be an int, got {described(window)}")
    if window < 1:
        raise ValueError(f"window must be >= 1, got {window}")
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, Tensor) or not t.is_floating_point() or t.dim() != 4:
            raise ValueError(f"{name} must be a floating [B, H, T, D] tensor, got {described(t)}")
    B, Hq, Tq, D = q.shape
    if k.shape != v.shape or k.shape[0] != B or k.shape[3] != D:
        raise ValueError(
            f"k and v must be [{B}, Hkv, Tk, {D}], got {tuple(k.shape)}, {tuple(v.shape)}"
        )
    if k.shape[1] == 0 or Hq % k.shape[1] != 0:
        raise ValueError(f"q's {Hq} heads are not a multiple of k's {k.shape[1]}")
    expected = (("query_positions", qpos, (B, Tq)), ("key_positions", kpos, (B, k.shape[2])),
                ("key_valid", valid, (B, k.shape[2])))  # fmt: skip
    for name, t, shape in expected:
        kinds = (torch.bool,) if name == "key_valid" else (torch.int32, torch.int64)
        if not isinstance(t, Tensor) or t.dtype not in kinds:
            raise ValueError(f"{name} must be a {kinds} tensor, got {described(t)}")
        if t.shape != shape or t.device != q.device:
            raise ValueError(f"{name} must have shape {list(shape)} on q's device")


__all__ = ["sliding_window_attention"]
