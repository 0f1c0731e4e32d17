"""P13 repetition penalty (CTRL's sign-aware rule), once per distinct token of a row's history.

Shapes: logits [B, V] floating; history [B, T] integer token ids in 0..V-1 (T may be 0;
no padding id: every entry is a token the row has produced); penalty a finite float > 0.
For each token in row b's history: a positive logit is divided by the penalty, a zero or
negative one multiplied by it, so penalty > 1 always makes a repeat less likely whatever
the logit's sign. A token repeated in the history is penalised once, not once per
occurrence. Returns a new tensor; the caller's logits are never written.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from ._describe import described


def apply_repetition_penalty(logits: Tensor, history: Tensor, penalty: float) -> Tensor:
    """logits with each row's previously produced tokens penalised (a new tensor)."""
    _check(logits, history, penalty)
    # A [B, V] "seen" mask: scattering True twice is still True, so duplicates count once.
    seen = torch.zeros(logits.shape, dtype=torch.bool, device=logits.device)
    seen.scatter_(1, history.long(), True)
    penalised = torch.where(logits > 0, logits / penalty, logits * penalty)
    return torch.where(seen, penalised, logits)


def _check(logits: Tensor, history: Tensor, penalty: float) -> None:
    """Reject bad shapes, ids and penalties before any arithmetic."""
    if not isinstance(logits, Tensor) or logits.dim() != 2 or not logits.is_floating_point():
        raise ValueError(f"logits must be a floating [B, V] tensor, got {described(logits)}")
    if not isinstance(history, Tensor) or history.dim() != 2:
        raise ValueError(f"history must be a [B, T] tensor of token ids, got {described(history)}")
    if history.is_floating_point() or history.is_complex() or history.dtype == torch.bool:
        raise ValueError(f"history must hold integer token ids, got {history.dtype}")
    B, V = logits.shape
    if history.shape[0] != B:
        raise ValueError(f"history has {history.shape[0]} rows, logits {B}")
    if history.device != logits.device or logits.is_meta:
        raise ValueError(f"history is on {history.device}, logits on {logits.device} (not meta)")
    bad = ((history < 0) | (history >= V)).nonzero()
    if len(bad):
        row, col = bad[0].tolist()
        raise ValueError(f"history[{row}, {col}] = {int(history[row, col])} is not in 0..{V - 1}")
    if isinstance(penalty, bool) or not isinstance(penalty, (int, float)):
        raise TypeError(f"penalty must be a float, got {type(penalty).__name__}")
    if not (math.isfinite(penalty) and penalty > 0):
        raise ValueError(f"penalty must be finite and > 0, got {penalty}")


__all__ = ["apply_repetition_penalty"]
