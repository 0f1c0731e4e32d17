"""A stranger's P28 from the kit's words alone: the three collectives issued async in one
fixed order on a copy of x, every handle waited on before returning; no validation (the kit
names none)."""

import torch.distributed as dist

VARIABLE = "DRILL_P28_MODULE"


def run_collectives(x, group=None):
    world = dist.get_world_size(group)
    reduced = x.clone()
    gathered = x.new_empty((world * x.shape[0], *x.shape[1:]))
    scattered = x.new_empty((x.shape[0] // world, *x.shape[1:]))
    handles = [
        dist.all_reduce(reduced, group=group, async_op=True),
        dist.all_gather_into_tensor(gathered, x.contiguous(), group=group, async_op=True),
        dist.reduce_scatter_tensor(scattered, x.contiguous(), group=group, async_op=True),
    ]
    for handle in handles:
        handle.wait()
    return reduced, gathered, scattered
