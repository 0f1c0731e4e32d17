"""PT36 column-parallel linear reference (transfer case; owner P28), on simulated ranks.

Column parallelism splits the OUTPUT features: rank r of R holds the row block
weight[r*O/R : (r+1)*O/R] (and the same slice of the bias) and computes its own slice of
y = x @ weight.T + bias from the whole, replicated x. Gathering the R local outputs along
the last dim (an all-gather in a real group) gives F.linear(x, weight, bias).

    local[r] = F.linear(x, weight[r*S:(r+1)*S], bias[r*S:(r+1)*S])      S = O / R
    gathered = cat(local, dim=-1)

Shapes: x [..., I]; weight [O, I]; bias [O] or None; world_size R >= 1 with O % R == 0
-> gather=True: [..., O]; gather=False: a list of R tensors [..., O/R] (rank order).
Per rank: (O/R)*I (+ O/R) parameters; the gather moves N*O activations in all.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from ._describe import described


def column_parallel_linear(
    x: Tensor, weight: Tensor, bias: Tensor | None, world_size: int, gather: bool = True
) -> Tensor | list[Tensor]:
    """Each simulated rank's slice of the output features; cat along -1 when `gather`."""
    _check(x, weight, bias, world_size)
    weight_shards = weight.chunk(world_size, dim=0)  # views: a rank's rows of weight
    bias_shards = [None] * world_size if bias is None else list(bias.chunk(world_size))
    local = [F.linear(x, w, b) for w, b in zip(weight_shards, bias_shards, strict=True)]
    # the all-gather a real group would do: rank r's features land at block r
    return torch.cat(local, dim=-1) if gather else local


def _check(x: Tensor, weight: Tensor, bias: Tensor | None, world_size: int) -> None:
    """Kinds and shapes first, then the one divisibility rule the split needs."""
    if not isinstance(x, Tensor) or x.dim() < 1:
        raise ValueError(f"x must be a tensor [..., I], got {described(x)}")
    if not isinstance(weight, Tensor) or weight.dim() != 2 or weight.shape[1] != x.shape[-1]:
        raise ValueError(f"weight must be [O, {x.shape[-1]}], got {described(weight)}")
    if bias is not None and (not isinstance(bias, Tensor) or bias.shape != weight.shape[:1]):
        raise ValueError(f"bias must be None or [{weight.shape[0]}], got {described(bias)}")
    if isinstance(world_size, bool) or not isinstance(world_size, int) or world_size < 1:
        raise ValueError(f"world_size must be an int >= 1, got {world_size!r}")
    if weight.shape[0] % world_size:
        raise ValueError(
            f"weight's O={weight.shape[0]} does not split over world_size={world_size}"
        )


__all__ = ["column_parallel_linear"]
