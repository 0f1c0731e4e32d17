"""P06 gather last valid token: the hidden state that predicts each row's next token.

Rows are right-padded: row b's tokens sit at 0..lengths[b]-1, so its last valid hidden
state is hidden[b, lengths[b] - 1]. One indexed gather for the whole batch, no Python loop
over rows, and row b's answer comes from row b only.

Shapes: hidden [B, T, C]; lengths [B] int, each in 1..T -> [B, C] (hidden's dtype, a new
tensor).
"""

from __future__ import annotations

import torch
from torch import Tensor

from ._describe import described


def gather_last_token(hidden: Tensor, lengths: Tensor) -> Tensor:
    """out[b] = hidden[b, lengths[b] - 1] -> [B, C]."""
    _check(hidden, lengths)
    rows = torch.arange(hidden.shape[0], device=hidden.device)
    # Advanced indexing pairs rows[b] with lengths[b] - 1 elementwise: one gather, a copy.
    return hidden[rows, lengths.long() - 1]


def _check(hidden: Tensor, lengths: Tensor) -> None:
    """Reject bad shapes and lengths before any indexing (0 would wrap to the pad at -1)."""
    if not isinstance(hidden, Tensor) or hidden.dim() != 3:
        raise ValueError(f"hidden must be a 3-D tensor [B, T, C], got {described(hidden)}")
    if not isinstance(lengths, Tensor) or lengths.dtype not in (torch.int32, torch.int64):
        raise ValueError(f"lengths must be an int32/int64 tensor, got {described(lengths)}")
    B, T, _ = hidden.shape
    if lengths.shape != (B,):
        raise ValueError(f"lengths must have shape [{B}], got {tuple(lengths.shape)}")
    if lengths.device != hidden.device:
        raise ValueError(f"lengths is on {lengths.device}, hidden on {hidden.device}")
    if lengths.device.type == "meta":
        raise ValueError("lengths is a meta tensor: its values cannot be checked")
    bad = ((lengths < 1) | (lengths > T)).nonzero().flatten().tolist()
    if bad:
        row = bad[0]
        raise ValueError(f"lengths[{row}] = {int(lengths[row])} is outside 1..{T}")


__all__ = ["gather_last_token"]
