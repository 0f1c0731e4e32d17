"""P07 masked logits: forbidden tokens to -inf, allowed tokens untouched, in a new tensor.

Shapes: logits [B, V] floating (any leading dims); allowed bool, logits' exact shape,
True = the token may be produced. The all-forbidden row is rejected: its softmax would be
NaN, and no later step (sampling, argmax) can recover from that silently. The caller's
logits are never written.
"""

from __future__ import annotations

import torch
from torch import Tensor

from ._describe import described


def masked_logits(logits: Tensor, allowed: Tensor) -> Tensor:
    """logits where allowed, -inf elsewhere (a new tensor, logits' dtype and device)."""
    if not isinstance(logits, Tensor) or logits.dim() < 1 or not logits.is_floating_point():
        raise ValueError(f"logits must be a floating tensor [B, V], got {described(logits)}")
    if not isinstance(allowed, Tensor) or allowed.dtype != torch.bool:
        raise ValueError(f"allowed must be a bool tensor, got {described(allowed)}")
    if allowed.shape != logits.shape:
        raise ValueError(
            f"allowed {tuple(allowed.shape)} must have logits' shape {tuple(logits.shape)}"
        )
    if allowed.device != logits.device:
        raise ValueError(f"allowed is on {allowed.device}, logits on {logits.device}")
    if allowed.device.type == "meta":
        raise ValueError("allowed is a meta tensor: its rows cannot be checked")
    empty = (~allowed.any(dim=-1)).nonzero()
    if len(empty):
        raise ValueError(f"allowed forbids every token of row {tuple(empty[0].tolist())}")
    return logits.masked_fill(~allowed, float("-inf"))  # masked_fill (not _) allocates


__all__ = ["masked_logits"]
