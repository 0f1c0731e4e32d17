"""A stranger's PT37 that pairs a pre-sharded x's blocks with weight's column blocks from
the last rank down (shards popped off a stack): right for a replicated x, which it slices
itself, and for one rank."""

import torch

VARIABLE = "DRILL_PT37_MODULE"
EXPECTED_OWNER = "pt37"


def row_parallel_linear(x, weight, bias, world_size):
    width = weight.shape[1] // world_size
    if isinstance(x, torch.Tensor):
        shards = [x[..., r * width : (r + 1) * width] for r in range(world_size)]
    else:
        shards = list(x)[::-1]
    out = None
    for r in range(world_size):
        partial = shards[r] @ weight[:, r * width : (r + 1) * width].T
        out = partial if out is None else out + partial
    return out if bias is None else out + bias
