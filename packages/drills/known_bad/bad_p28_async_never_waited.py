"""A stranger issues the three collectives with async_op=True and returns the buffers
without waiting on the handles (on CPU the numbers are usually there already)."""

import torch
import torch.distributed as dist

VARIABLE = "DRILL_P28_MODULE"
EXPECTED_OWNER = "p28"


def run_collectives(x, group=None):
    if not isinstance(x, torch.Tensor) or x.dim() == 0:
        raise ValueError("x must be a tensor with rows")
    world = dist.get_world_size(group)
    if x.shape[0] % world:
        raise ValueError(f"x has {x.shape[0]} rows, not a multiple of {world}")
    local = x.contiguous()
    reduced = local.clone()
    gathered = local.new_empty((world * x.shape[0], *x.shape[1:]))
    scattered = local.new_empty((x.shape[0] // world, *x.shape[1:]))
    dist.all_reduce(reduced, group=group, async_op=True)
    dist.all_gather_into_tensor(gathered, local, group=group, async_op=True)
    work = dist.reduce_scatter_tensor(scattered, local, group=group, async_op=True)
    work.get_future()  # looks like a wait, but nothing waits
    return reduced, gathered, scattered
