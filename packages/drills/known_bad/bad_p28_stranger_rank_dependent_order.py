"""A stranger lets rank 0 gather first and the other rank reduce first, so the two ranks
issue the same collectives in different orders (mismatched buffers, or a wait forever)."""

import torch
import torch.distributed as dist

VARIABLE = "DRILL_P28_MODULE"
EXPECTED_OWNER = "p28"


def run_collectives(x, group=None):
    world = dist.get_world_size(group)
    if x.shape[0] % world:
        raise ValueError("x rows must divide by the world size")
    x = x.contiguous()
    reduced = x.clone()
    gathered = torch.empty((world * x.shape[0], *x.shape[1:]), dtype=x.dtype)
    scattered = torch.empty((x.shape[0] // world, *x.shape[1:]), dtype=x.dtype)
    if dist.get_rank(group) == 0:
        dist.all_gather_into_tensor(gathered, x, group=group)
        dist.all_reduce(reduced, group=group)
    else:
        dist.all_reduce(reduced, group=group)
        dist.all_gather_into_tensor(gathered, x, group=group)
    dist.reduce_scatter_tensor(scattered, x, group=group)
    return reduced, gathered, scattered
