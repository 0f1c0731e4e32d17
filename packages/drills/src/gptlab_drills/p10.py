"""P10 nucleus (top-p) filter: keep the smallest set of most probable tokens reaching p.

Shapes: logits [B, V] (any leading dims; the vocabulary is the last); p a float in (0, 1].
Per row, in fp32: sort the probabilities descending, find the first sorted position whose
cumulative probability reaches p, and keep every logit >= the logit there (tokens tied
with the last kept token are all kept: no tie-break by index). The most probable token is
always kept, so no row ends all -inf; p = 1 keeps every token. The keep mask is computed
in sorted order and scattered back to vocabulary order. Returns a new tensor.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from ._describe import described


def top_p_filter(logits: Tensor, p: float) -> Tensor:
    """logits outside each row's nucleus set to -inf (a new tensor, logits' dtype)."""
    if not isinstance(logits, Tensor) or logits.dim() < 1 or not logits.is_floating_point():
        raise ValueError(f"logits must be a floating tensor [B, V], got {described(logits)}")
    if logits.shape[-1] == 0:  # no token to keep: the nucleus is never empty
        raise ValueError(f"logits must have at least one token (V >= 1), got {described(logits)}")
    if isinstance(p, bool) or not isinstance(p, (int, float)):
        raise TypeError(f"p must be a float, got {type(p).__name__}")
    if not (math.isfinite(p) and 0.0 < p <= 1.0):
        raise ValueError(f"p must be in (0, 1], got {p}")
    if p >= 1.0:
        return logits.clone()
    sorted_logits, order = torch.sort(logits.float(), dim=-1, descending=True)
    probs = torch.softmax(sorted_logits, dim=-1)
    # Mass strictly before each sorted position: the prefix through position i is still
    # short of p exactly when this is < p, so those positions form the nucleus.
    before = torch.cumsum(probs, dim=-1) - probs
    in_nucleus = before < p
    in_nucleus[..., 0] = True  # the most probable token always survives
    count = in_nucleus.sum(dim=-1, keepdim=True)  # [..., 1]
    boundary = sorted_logits.gather(-1, count - 1)  # the last kept logit
    keep_sorted = sorted_logits >= boundary  # ties with the boundary stay
    keep = torch.empty_like(keep_sorted).scatter_(-1, order, keep_sorted)  # vocabulary order
    return logits.masked_fill(~keep, float("-inf"))


__all__ = ["top_p_filter"]
