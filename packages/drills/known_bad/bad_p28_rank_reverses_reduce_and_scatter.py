"""A stranger lets rank 1 issue reduce_scatter before all_reduce (rank 0 keeps the stated
order). Gloo pairs the two calls and every number comes out right; only the recorded order
of each rank's collectives shows the ranks were out of step."""

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
    if dist.get_rank(group) == 1:
        dist.reduce_scatter_tensor(scattered, local, group=group)
        dist.all_gather_into_tensor(gathered, local, group=group)
        dist.all_reduce(reduced, group=group)
    else:
        dist.all_reduce(reduced, group=group)
        dist.all_gather_into_tensor(gathered, local, group=group)
        dist.reduce_scatter_tensor(scattered, local, group=group)
    return reduced, gathered, scattered
