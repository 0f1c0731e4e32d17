"""P05 causal and length masks: one additive mask for right-padded rows, prefill or decode.

Row b holds `lengths[b]` valid keys in slots 0..len-1 (the rest is right padding). The
L queries are the *last* L of the S key slots, so query i sits at slot S - L + i
(bottom-right alignment: a square prefill is the usual triangle, a one-token decode sees
every slot). Key j may be attended by query i iff j <= S - L + i and j < lengths[b].

Shapes: lengths [B] int, each in 1..S; returns [B, 1, L, S] of `dtype`: 0.0 where
allowed, torch.finfo(dtype).min where not, so `scores + mask` broadcasts over heads.
"""

from __future__ import annotations

import torch
from torch import Tensor

from ._describe import described


def causal_length_mask(
    lengths: Tensor,
    query_length: int,
    key_length: int | None = None,
    dtype: torch.dtype = torch.float32,
) -> Tensor:
    """Additive mask [B, 1, L, S]: 0 where key j <= S - L + i and j < lengths[b], else min."""
    S = query_length if key_length is None else key_length
    _check(lengths, query_length, S, dtype)
    L = query_length
    query_slot = torch.arange(S - L, S, device=lengths.device)[:, None]  # [L, 1]
    key_slot = torch.arange(S, device=lengths.device)[None, :]  # [1, S]
    causal = key_slot <= query_slot  # [L, S]
    valid = key_slot < lengths[:, None]  # [B, S]
    allowed = causal[None, :, :] & valid[:, None, :]  # [B, L, S]
    # The dtype's own minimum, not -inf: a finite fill keeps (scores + mask) finite, and
    # it survives the cast to fp16/bf16 (float32's min would overflow to -inf there).
    blocked = torch.full((), torch.finfo(dtype).min, dtype=dtype, device=lengths.device)
    zero = torch.zeros((), dtype=dtype, device=lengths.device)
    return torch.where(allowed, zero, blocked)[:, None, :, :]


def _check(lengths: Tensor, query_length: int, key_length: int, dtype: torch.dtype) -> None:
    """Reject bad sizes and lengths before anything is built."""
    if not isinstance(lengths, Tensor) or lengths.dim() != 1:
        raise ValueError(f"lengths must be a 1-D tensor [B], got {described(lengths)}")
    if lengths.dtype not in (torch.int32, torch.int64):
        raise ValueError(f"lengths must be int32 or int64, got {lengths.dtype}")
    if lengths.device.type == "meta":
        raise ValueError("lengths is a meta tensor: its values cannot be checked")
    for name, size in (("query_length", query_length), ("key_length", key_length)):
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise ValueError(f"{name} must be a positive int, got {size!r}")
    if query_length > key_length:
        raise ValueError(f"query_length {query_length} exceeds key_length {key_length}")
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise ValueError(f"dtype must be a floating-point dtype, got {dtype!r}")
    # A row with no valid key would make every score -inf/min: softmax of nothing.
    bad = ((lengths < 1) | (lengths > key_length)).nonzero().flatten().tolist()
    if bad:
        row = bad[0]
        raise ValueError(f"lengths[{row}] = {int(lengths[row])} is outside 1..{key_length}")


__all__ = ["causal_length_mask"]
