"""A stranger skips reduce_scatter and slices the all_reduce result locally, always taking
the first slice (every rank gets rank 0's part)."""

import torch
import torch.distributed as dist

VARIABLE = "DRILL_P28_MODULE"
EXPECTED_OWNER = "p28"


def run_collectives(x, group=None):
    world = dist.get_world_size(group)
    if x.shape[0] % world:
        raise ValueError("x must split evenly across ranks")
    reduced = x.clone()
    dist.all_reduce(reduced, group=group)
    gathered = torch.empty((world * x.shape[0], *x.shape[1:]), dtype=x.dtype)
    dist.all_gather_into_tensor(gathered, x.contiguous(), group=group)
    scattered = reduced.chunk(world, dim=0)[0].clone()
    return reduced, gathered, scattered
