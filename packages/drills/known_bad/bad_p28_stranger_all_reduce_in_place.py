"""A stranger all_reduces the caller's x in place, so x is overwritten and the gather and
reduce-scatter that follow work on the sum instead of each rank's own shard."""

import torch
import torch.distributed as dist

VARIABLE = "DRILL_P28_MODULE"
EXPECTED_OWNER = "p28"


def run_collectives(x, group=None):
    world = dist.get_world_size(group)
    if x.shape[0] % world != 0:
        raise ValueError(f"x: {x.shape[0]} rows do not split over {world} ranks")
    dist.all_reduce(x, group=group)
    gathered = torch.empty((world * x.shape[0], *x.shape[1:]), dtype=x.dtype)
    dist.all_gather_into_tensor(gathered, x, group=group)
    scattered = torch.empty((x.shape[0] // world, *x.shape[1:]), dtype=x.dtype)
    dist.reduce_scatter_tensor(scattered, x, group=group)
    return x, gathered, scattered
