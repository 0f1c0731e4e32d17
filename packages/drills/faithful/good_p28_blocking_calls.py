"""A stranger's P28 from the README contract alone: blocking calls in the stated order,
output buffers from torch.empty, the world size read once."""

import torch
import torch.distributed as dist

VARIABLE = "DRILL_P28_MODULE"


def run_collectives(x, group=None):
    if not torch.is_tensor(x) or x.ndim < 1:
        raise ValueError("x must be a tensor with a leading row dimension")
    world = dist.get_world_size(group=group)
    rows = x.shape[0]
    if rows % world != 0:
        raise ValueError(f"x has {rows} rows; they must split evenly over {world} ranks")
    local = x.contiguous()
    total = local.clone()
    dist.all_reduce(total, op=dist.ReduceOp.SUM, group=group)
    everyone = torch.empty((rows * world,) + tuple(x.shape[1:]), dtype=x.dtype, device=x.device)
    dist.all_gather_into_tensor(everyone, local, group=group)
    mine = torch.empty((rows // world,) + tuple(x.shape[1:]), dtype=x.dtype, device=x.device)
    dist.reduce_scatter_tensor(mine, local, op=dist.ReduceOp.SUM, group=group)
    return total, everyone, mine
