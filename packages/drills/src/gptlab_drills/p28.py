"""P28 the three collectives of tensor parallelism, on every rank of a process group.

Each rank calls `run_collectives(x)` with its own shard `x [N, ...]` (N divisible by the
world size W) in an initialised process group (Gloo on CPU). Every rank issues the same
collectives in the same order (all_reduce, all_gather_into_tensor, reduce_scatter_tensor):
a collective is matched by its position in that sequence, so two ranks in different
orders exchange the wrong buffers or wait forever. The three are issued asynchronously and
all waited on before anything is returned. The caller's x is only read. Ranks whose x
differ in dtype or shape all raise the same ValueError first: a fingerprint of each rank's
(dtype, shape) is gathered before the three (with more than one rank in the group).

Returns, on rank r: reduced [N, ...] = sum over ranks of x; gathered [W * N, ...] = every
rank's x in rank order; scattered [N / W, ...] = rows r*N/W .. (r+1)*N/W - 1 of reduced.
"""

from __future__ import annotations

import zlib
from typing import Any

import torch
import torch.distributed as dist
from torch import Tensor

from ._describe import described


def run_collectives(
    x: Tensor, group: dist.ProcessGroup | None = None
) -> tuple[Tensor, Tensor, Tensor]:
    """(all_reduce sum, all_gather along dim 0, reduce_scatter sum along dim 0) of x."""
    world = _check(x, group)
    if world > 1:
        _check_ranks_agree(x, group, world)
    source = x.detach().contiguous()  # a dense buffer to send; x itself is never written
    reduced = source.clone()  # all_reduce works in place: on a copy, not the caller's x
    gathered = source.new_empty((world * x.shape[0], *x.shape[1:]))
    scattered = source.new_empty((x.shape[0] // world, *x.shape[1:]))
    # The same three calls, in the same order, on every rank; all in flight, then all waited.
    works = [
        dist.all_reduce(reduced, op=dist.ReduceOp.SUM, group=group, async_op=True),
        dist.all_gather_into_tensor(gathered, source, group=group, async_op=True),
        dist.reduce_scatter_tensor(
            scattered, source, op=dist.ReduceOp.SUM, group=group, async_op=True
        ),
    ]
    for work in works:
        if work is not None:
            work.wait()
    return reduced, gathered, scattered


def _check(x: Tensor, group: dist.ProcessGroup | None) -> int:
    """The world size; an error on every rank alike, before any collective is issued."""
    if not dist.is_available() or not dist.is_initialized():
        raise ValueError("run_collectives needs an initialised process group")
    if group is not None and not isinstance(group, dist.ProcessGroup):
        raise TypeError(f"group must be a ProcessGroup or None, got {described(group)}")
    if not isinstance(x, Tensor) or x.dim() == 0:
        raise TypeError(f"x must be a tensor [N, ...], got {described(x)}")
    # Gloo sums floats and integers; a meta tensor holds no data to send.
    if x.dtype == torch.bool or x.is_complex() or x.is_meta:
        raise ValueError(f"x must be real numbers with data, got {described(x)} on {x.device}")
    world = dist.get_world_size(group)
    if x.shape[0] % world:
        raise ValueError(f"x has {x.shape[0]} rows, not divisible by the world size {world}")
    return world


def _check_ranks_agree(x: Tensor, group: dist.ProcessGroup | None, world: int) -> None:
    """ValueError on every rank alike when the ranks' x differ in dtype or shape.

    A collective exchanges raw buffers: ranks that disagree make Gloo abort a rank or
    pair the wrong bytes. A checksum of each rank's (dtype, shape), gathered before the
    three collectives, lets every rank see a disagreement and refuse together (a crc32: the
    same in every process, unlike the salted `hash`).
    """
    description = f"{str(x.dtype).removeprefix('torch.')} {list(x.shape)}"
    mine = torch.tensor([zlib.crc32(description.encode())], device=x.device)
    everyone = mine.new_empty(world)
    dist.all_gather_into_tensor(everyone, mine, group=group)
    if bool((everyone != mine).any()):  # then every rank sees it
        # Only now do the descriptions themselves travel, to name each rank's.
        found: list[Any] = [None] * world
        dist.all_gather_object(found, description, group)
        passed = ", ".join(f"rank {rank} passed {text}" for rank, text in enumerate(found))
        raise ValueError(f"x differs across ranks in dtype or shape: {passed}")


__all__ = ["run_collectives"]
