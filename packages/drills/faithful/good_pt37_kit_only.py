"""A stranger's PT37 from the kit's words alone (the kit names no rejection, so none):
a replicated x split with torch.split, every partial in float64 with the bias folded into
rank 0's partial (added once), the partials summed in reverse rank order."""

import torch

VARIABLE = "DRILL_PT37_MODULE"


def row_parallel_linear(x, weight, bias, world_size):
    width = weight.shape[1] // world_size
    shards = list(torch.split(x, width, dim=-1)) if torch.is_tensor(x) else list(x)
    blocks = torch.split(weight, width, dim=1)
    partials = []
    for rank, (xs, ws) in enumerate(zip(shards, blocks)):
        partial = torch.matmul(xs.double(), ws.double().t())
        if rank == 0 and bias is not None:
            partial = partial + bias.double()
        partials.append(partial)
    total = partials[-1]
    for partial in reversed(partials[:-1]):
        total = total + partial
    return total.to(shards[0].dtype)
