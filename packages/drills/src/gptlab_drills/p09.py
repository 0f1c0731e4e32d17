"""P09 top-k filter: keep each row's k largest logits, set the rest to -inf.

Shapes: logits [B, V] (any leading dims; the vocabulary is the last); k an int in 0..V.
The keep rule is a threshold, not an index list: every logit >= the row's k-th largest
stays, so tokens tied with the k-th are all kept and no tie-break by index is assumed.
k = 0 means "no filtering" (a copy). Rows never interact. Returns a new tensor.
"""

from __future__ import annotations

import torch
from torch import Tensor

from ._describe import described


def top_k_filter(logits: Tensor, k: int) -> Tensor:
    """logits with everything below each row's k-th largest set to -inf (a new tensor)."""
    if not isinstance(logits, Tensor) or logits.dim() < 1 or not logits.is_floating_point():
        raise ValueError(f"logits must be a floating tensor [B, V], got {described(logits)}")
    V = logits.shape[-1]
    if isinstance(k, bool) or not isinstance(k, int):
        raise TypeError(f"k must be an int, got {type(k).__name__}")
    if not 0 <= k <= V:
        raise ValueError(f"k must be in 0..{V} (the vocabulary size), got {k}")
    if k == 0:
        return logits.clone()
    kth = torch.topk(logits, k, dim=-1).values[..., -1:]  # [..., 1]: the row's k-th largest
    return logits.masked_fill(logits < kth, float("-inf"))


__all__ = ["top_k_filter"]
