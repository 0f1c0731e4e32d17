"""PT29 ragged grammar mask (transfer case; owner P07).

Each row b of logits may produce only the token ids its grammar allows right now, given as
one flat list for the whole batch and cumulative offsets (CSR form):

    allowed(b) = allowed_ids[offsets[b] : offsets[b + 1]]
    out[b, v]  = logits[b, v]  if v in allowed(b)  else  -inf   (the declared sentinel)

One scatter of True into a [B, V] keep-mask at (row of each id, id) -- duplicates write the
same True -- then one masked fill into a new tensor; no Python loop over V or over rows. An
empty set leaves the whole row at the sentinel; logits are only read.

Shapes: logits [B, V] floating; allowed_ids [M] integer in [0, V); offsets [B + 1] integer,
nondecreasing from 0 to M -> [B, V] (logits' dtype and device).
"""

from __future__ import annotations

import torch
from torch import Tensor

from ._describe import described

SENTINEL = float("-inf")  # what a disallowed token's logit becomes


def apply_allowed_tokens(logits: Tensor, allowed_ids: Tensor, offsets: Tensor) -> Tensor:
    """logits where the row's grammar allows the token, SENTINEL elsewhere -> a new [B, V]."""
    _check(logits, allowed_ids, offsets)
    B, V = logits.shape
    counts = offsets[1:] - offsets[:-1]  # [B], each row's set size
    rows = torch.repeat_interleave(torch.arange(B, device=logits.device), counts.long())
    keep = torch.zeros(B, V, dtype=torch.bool, device=logits.device)
    keep[rows, allowed_ids.long()] = True
    return logits.masked_fill(~keep, SENTINEL)


def _check(logits: Tensor, allowed_ids: Tensor, offsets: Tensor) -> None:
    """Reject kinds, shapes, devices, ids outside the vocabulary and malformed offsets first."""
    if not isinstance(logits, Tensor) or logits.dim() != 2 or not logits.is_floating_point():
        raise ValueError(f"logits must be a floating [B, V] tensor, got {described(logits)}")
    B, V = logits.shape
    for name, index in (("allowed_ids", allowed_ids), ("offsets", offsets)):
        if not isinstance(index, Tensor) or index.dtype not in (torch.int32, torch.int64):
            raise ValueError(f"{name} must be an int32/int64 tensor, got {described(index)}")
        if index.dim() != 1:
            raise ValueError(f"{name} must be 1-D, got {described(index)}")
        if index.device != logits.device:
            raise ValueError(f"{name} is on {index.device}, logits on {logits.device}")
    if bool(((allowed_ids < 0) | (allowed_ids >= V)).any()):
        raise ValueError(f"allowed_ids hold an id outside [0, V={V})")
    if len(offsets) != B + 1 or int(offsets[0]) != 0 or int(offsets[-1]) != len(allowed_ids):
        raise ValueError(f"offsets must run from 0 to {len(allowed_ids)} over {B + 1} entries")
    if bool((offsets[1:] < offsets[:-1]).any()):
        raise ValueError(f"offsets must be nondecreasing, got {offsets.tolist()}")


__all__ = ["SENTINEL", "apply_allowed_tokens"]
