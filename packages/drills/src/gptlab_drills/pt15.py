"""PT15 online softmax partition merge (transfer case; owner P18).

A partition p of one query's keys is summarised by m_p = max score, l_p = sum of
exp(score - m_p) and o_p = the partition's own softmax-weighted value (normalised: the
attention output over that partition alone). Two summaries merge into the summary of the
union, so attention over all keys never needs the full score row:

    m = max(m_a, m_b)
    l = l_a * exp(m_a - m) + l_b * exp(m_b - m)
    o = (l_a * exp(m_a - m) * o_a + l_b * exp(m_b - m) * o_b) / l

An empty partition is (m = -inf, l = 0, o = 0); merging two empty ones gives an empty one,
never NaN (the shift is taken as 0 where m is -inf). Worked in fp32 or wider: m and l come
back fp32 (or wider), o in o_a's dtype.

Shapes: m_*, l_* [...] (any leading shape, the same for all four); o_* [..., D].
"""

from __future__ import annotations

import torch
from torch import Tensor

from ._describe import described


def merge_softmax_parts(
    m_a: Tensor, l_a: Tensor, o_a: Tensor, m_b: Tensor, l_b: Tensor, o_b: Tensor
) -> tuple[Tensor, Tensor, Tensor]:
    """The (m, l, o) summary of partitions a and b together."""
    _check(m_a, l_a, o_a, m_b, l_b, o_b)
    work = torch.promote_types(m_a.dtype, torch.float32)
    m = torch.maximum(m_a.to(work), m_b.to(work))
    shift = torch.where(m.isfinite(), m, 0.0)  # both empty: exp(-inf - 0) = 0, not NaN
    w_a = l_a.to(work) * torch.exp(m_a.to(work) - shift)
    w_b = l_b.to(work) * torch.exp(m_b.to(work) - shift)
    total = w_a + w_b
    mixed = w_a[..., None] * o_a.to(work) + w_b[..., None] * o_b.to(work)
    o = mixed / torch.where(total > 0, total, 1.0)[..., None]
    return m, total, o.to(o_a.dtype)


def _check(*parts: Tensor) -> None:
    """Reject kinds and mismatched shapes before any work."""
    names = ("m_a", "l_a", "o_a", "m_b", "l_b", "o_b")
    for name, part in zip(names, parts, strict=True):
        if not isinstance(part, Tensor) or not part.is_floating_point():
            raise ValueError(f"{name} must be a floating tensor, got {described(part)}")
    summary, o_shape = parts[0].shape, parts[2].shape
    if len(o_shape) == 0 or o_shape[:-1] != summary:
        raise ValueError(f"o_a must have shape [*m_a.shape, D], got {tuple(o_shape)}")
    for name, part in zip(names, parts, strict=True):
        want = o_shape if name.startswith("o") else summary
        if part.shape != want or part.device != parts[0].device:
            raise ValueError(f"{name} must have shape {tuple(want)} on m_a's device")


__all__ = ["merge_softmax_parts"]
