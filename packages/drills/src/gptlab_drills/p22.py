"""P22 live-request compaction of a persistent batch.

A serving loop keeps one row per request in several batch-major fields (tokens, lengths,
K/V, sampling seeds). When requests finish, the live rows move to the front in their old
order, every field by the same index, and the caller learns where each old row went.

Shapes: fields {name: [B, ...]} (every field's leading size is B); live [B] bool.
Returns (compacted {name: [N, ...]}, old_to_new [B] int64) with N = live.sum(), old row i
at new row old_to_new[i] when live, and old_to_new[i] = -1 when not.
"""

from __future__ import annotations

from collections.abc import Mapping

import torch
from torch import Tensor

from ._describe import described


def compact_live_rows(
    fields: Mapping[str, Tensor], live: Tensor
) -> tuple[dict[str, Tensor], Tensor]:
    """Keep the live rows of every field, in order, as new tensors; map old rows to new."""
    _check(fields, live)
    keep = live.nonzero().flatten()  # ascending, so the live rows keep their order
    old_to_new = torch.full(live.shape, -1, dtype=torch.int64, device=live.device)
    old_to_new[keep] = torch.arange(len(keep), device=live.device)
    # index_select always copies: no result aliases a row buffer the caller will reuse.
    compacted = {name: field.index_select(0, keep) for name, field in fields.items()}
    return compacted, old_to_new


def _check(fields: Mapping[str, Tensor], live: Tensor) -> None:
    """Reject a bad mask or a field of another batch size before any copy."""
    if not isinstance(live, Tensor) or live.dim() != 1 or live.dtype != torch.bool:
        raise ValueError(f"live must be a 1-D bool tensor, got {described(live)}")
    if live.device.type == "meta":  # no values: which rows are live is unknown
        raise ValueError("live is a meta tensor")
    if not isinstance(fields, Mapping):
        raise ValueError(f"fields must be a mapping of names to tensors, got {type(fields)}")
    B = live.shape[0]
    for name, field in fields.items():
        if not isinstance(field, Tensor) or field.dim() == 0:
            raise ValueError(f"fields[{name!r}] must be a tensor of shape [B, ...]")
        if field.shape[0] != B:
            raise ValueError(f"fields[{name!r}] has {field.shape[0]} rows, live has {B}")
        if field.device != live.device:
            raise ValueError(f"fields[{name!r}] is on {field.device}, live on {live.device}")


__all__ = ["compact_live_rows"]
