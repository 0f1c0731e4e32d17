"""PT39 global top-k from vocab shards (transfer case; owner P28).

The vocabulary is split over R ranks: rank r holds logits[:, offset_r : offset_r + V_r]
(a shard; the last may be narrower). The exact global top-k needs only each rank's own
top min(k, V_r) with its ids made global: a logit outside its shard's top k has k better
ones on that shard alone. So each row moves at most R*k candidates, never V logits.

Order (the tie policy): larger value first; among equal values the smaller global id.
Every step keeps it, so the result is the first k of a stable descending sort of the
full row.

    local_topk(shard [N, V_r], k, offset) -> values, ids [N, min(k, V_r)]   (ids global)
    merge_topk(values [N, M], ids [N, M], k) -> values, ids [N, k]          (k <= M)
    global_topk(shards, k) -> values [N, k] (the shards' dtype), ids [N, k] int64
"""

from __future__ import annotations

import torch
from torch import Tensor

from ._describe import described


def local_topk(shard: Tensor, k: int, offset: int) -> tuple[Tensor, Tensor]:
    """This rank's candidates: its best min(k, V_r) per row, ids made global."""
    _check_count(k, "k")
    _check_count(offset, "offset", least=0)
    if not isinstance(shard, Tensor) or shard.dim() != 2:
        raise ValueError(f"shard must be a tensor [N, V_r], got {described(shard)}")
    values, ids = shard.sort(dim=-1, descending=True, stable=True)  # ties: smaller id first
    keep = min(k, shard.shape[-1])
    return values[:, :keep], ids[:, :keep] + offset


def merge_topk(values: Tensor, ids: Tensor, k: int) -> tuple[Tensor, Tensor]:
    """The exact top k of the gathered candidates, in the tie policy's order."""
    _check_count(k, "k")
    if not isinstance(values, Tensor) or values.dim() != 2:
        raise ValueError(f"values must be a tensor [N, M], got {described(values)}")
    if not isinstance(ids, Tensor) or ids.shape != values.shape or ids.is_floating_point():
        raise ValueError(f"ids must be integers of values' shape, got {described(ids)}")
    if k > values.shape[-1]:
        raise ValueError(f"k={k} is more than the {values.shape[-1]} candidates per row")
    by_id = ids.argsort(dim=-1, stable=True)  # candidates in id order, then a stable
    ranked = values.gather(-1, by_id).sort(dim=-1, descending=True, stable=True).indices
    order = by_id.gather(-1, ranked[:, :k])  # sort by value: equal values keep id order
    return values.gather(-1, order), ids.gather(-1, order)


def global_topk(shards: list[Tensor], k: int) -> tuple[Tensor, Tensor]:
    """Local candidates per shard (offsets from the widths), concatenated, merged."""
    if not isinstance(shards, (list, tuple)) or not shards:
        raise ValueError(f"shards must be a non-empty list of tensors, got {described(shards)}")
    if not all(isinstance(s, Tensor) and s.dim() == 2 for s in shards):
        raise ValueError(f"shards must all be [N, V_r] tensors: {[described(s) for s in shards]}")
    vocab = sum(s.shape[-1] for s in shards)
    _check_count(k, "k")
    if k > vocab:
        raise ValueError(f"k={k} is outside the vocabulary range [1, {vocab}]")
    offsets = [sum(s.shape[-1] for s in shards[:r]) for r in range(len(shards))]
    found = [local_topk(s, k, o) for s, o in zip(shards, offsets, strict=True)]
    return merge_topk(torch.cat([v for v, _ in found], -1), torch.cat([i for _, i in found], -1), k)


def _check_count(value: int, name: str, least: int = 1) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be an int, got {described(value)}")
    if value < least:
        raise ValueError(f"{name}={value} is outside the range [{least}, ...)")


__all__ = ["global_topk", "local_topk", "merge_topk"]
