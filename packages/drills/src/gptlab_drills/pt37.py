"""PT37 row-parallel linear reference (transfer case; owner P28), on simulated ranks.

Row parallelism splits the INPUT features: rank r of R holds the column block
weight[:, r*I/R : (r+1)*I/R] and the matching features of x, and computes a partial
product over its features only. The partials sum (an all-reduce in a real group) to
x @ weight.T; the bias is added once, after the sum: added on every rank before it, it
would count R times.

    partial[r] = x[..., r*S:(r+1)*S] @ weight[:, r*S:(r+1)*S].T          S = I / R
    out        = sum_r partial[r] + bias

x comes replicated (a tensor [..., I]: each rank takes its own features, the scatter) or
pre-sharded (a list of R tensors [..., I/R], rank order). Shapes: weight [O, I]; bias [O]
or None; world_size R >= 1 with I % R == 0 -> [..., O].
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from ._describe import described


def row_parallel_linear(
    x: Tensor | list[Tensor], weight: Tensor, bias: Tensor | None, world_size: int
) -> Tensor:
    """sum over simulated ranks of x_r @ weight_r.T, then the bias once -> [..., O]."""
    _check_layer(weight, bias, world_size)
    x_shards = _input_shards(x, weight, world_size)
    weight_shards = weight.chunk(world_size, dim=1)  # views: a rank's columns of weight
    partials = [F.linear(xs, ws) for xs, ws in zip(x_shards, weight_shards, strict=True)]
    reduced = torch.stack(partials).sum(dim=0)  # the all-reduce a real group would do
    return reduced if bias is None else reduced + bias


def _input_shards(x: Tensor | list[Tensor], weight: Tensor, world_size: int) -> list[Tensor]:
    """Each rank's features of x: a replicated x is scattered, a sharded one checked."""
    width = weight.shape[1] // world_size
    if isinstance(x, Tensor):
        if x.dim() < 1 or x.shape[-1] != weight.shape[1]:
            raise ValueError(f"x must be [..., {weight.shape[1]}], got {described(x)}")
        return list(x.chunk(world_size, dim=-1))
    if not isinstance(x, (list, tuple)) or len(x) != world_size:
        raise ValueError(f"x must be a tensor or {world_size} shards, got {described(x)}")
    for shard in x:
        if not isinstance(shard, Tensor) or shard.dim() < 1 or shard.shape[-1] != width:
            raise ValueError(f"each x shard must be [..., {width}], got {described(shard)}")
        if shard.shape != x[0].shape:
            raise ValueError(f"x shards differ in shape: {[tuple(s.shape) for s in x]}")
    return list(x)


def _check_layer(weight: Tensor, bias: Tensor | None, world_size: int) -> None:
    if not isinstance(weight, Tensor) or weight.dim() != 2:
        raise ValueError(f"weight must be [O, I], got {described(weight)}")
    if bias is not None and (not isinstance(bias, Tensor) or bias.shape != weight.shape[:1]):
        raise ValueError(f"bias must be None or [{weight.shape[0]}], got {described(bias)}")
    if isinstance(world_size, bool) or not isinstance(world_size, int) or world_size < 1:
        raise ValueError(f"world_size must be an int >= 1, got {world_size!r}")
    if weight.shape[1] % world_size:
        raise ValueError(
            f"weight's I={weight.shape[1]} does not split over world_size={world_size}"
        )


__all__ = ["row_parallel_linear"]
