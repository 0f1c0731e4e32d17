"""PT03 offset segment reduction (transfer case; owner P25).

Packed rows values [N, C] fall into B segments delimited by offsets [B + 1]: segment b is
values[offsets[b]:offsets[b + 1]] (offsets start at 0, never decrease, end at N). For
each segment, its column sums and maxima, and whether it holds any row:

    sums[b]  = values[offsets[b]:offsets[b + 1]].sum(0)     (0 when empty)
    maxes[b] = values[offsets[b]:offsets[b + 1]].amax(0)    (0 when empty: see valid)
    valid[b] = offsets[b + 1] > offsets[b]

An empty segment's max is a defined 0, never read as data: valid says which maxima are real
(a real max may itself be 0, negative or -inf). One scatter per reduction, no loop.

Shapes: values [N, C] (float or integer), offsets [B + 1] int32/int64 -> sums [B, C],
maxes [B, C] (values' dtype), valid [B] bool.
"""

from __future__ import annotations

import torch
from torch import Tensor

from ._describe import described


def segment_sum_max(values: Tensor, offsets: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """(sums [B, C], maxes [B, C], valid [B]) of the segments offsets delimit."""
    _check(values, offsets)
    counts = (offsets[1:] - offsets[:-1]).long()  # [B] rows per segment
    segment = torch.repeat_interleave(torch.arange(counts.numel(), device=values.device), counts)
    index = segment[:, None].expand_as(values)  # [N, C], a view
    blank = values.new_zeros(counts.numel(), values.shape[1])
    sums = blank.index_add(0, segment, values)
    maxes = blank.scatter_reduce(0, index, values, "amax", include_self=False)
    return sums, maxes, counts > 0


def _check(values: Tensor, offsets: Tensor) -> None:
    """Reject what is not a partition of values' rows before anything is reduced."""
    if not isinstance(values, Tensor) or values.dim() != 2:
        raise ValueError(f"values must be a 2-D tensor [N, C], got {described(values)}")
    if not isinstance(offsets, Tensor) or offsets.dtype not in (torch.int32, torch.int64):
        raise ValueError(f"offsets must be an int32/int64 tensor, got {described(offsets)}")
    if offsets.dim() != 1 or offsets.numel() == 0 or offsets.device != values.device:
        raise ValueError(f"offsets must be [B + 1] on {values.device}, got {described(offsets)}")
    if int(offsets[0]) != 0:
        raise ValueError(f"offsets must start at 0, got {int(offsets[0])}")
    if bool((offsets[1:] < offsets[:-1]).any()):
        raise ValueError(f"offsets decrease: {offsets.tolist()}")
    if int(offsets[-1]) != values.shape[0]:
        raise ValueError(f"offsets end at {int(offsets[-1])}, values hold N={values.shape[0]}")


__all__ = ["segment_sum_max"]
