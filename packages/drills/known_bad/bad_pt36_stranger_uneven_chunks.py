"""A stranger's PT36 that never checks O against the rank count: torch.chunk hands out
ceil(O/R)-row shards, so O=6 over 4 ranks silently runs on 3 ranks (and O=3 over 8 on 3)."""

import torch
import torch.nn.functional as F

VARIABLE = "DRILL_PT36_MODULE"
EXPECTED_OWNER = "pt36"


def column_parallel_linear(x, weight, bias, world_size, gather=True):
    weights = weight.chunk(world_size)
    biases = bias.chunk(world_size) if bias is not None else [None] * len(weights)
    local = [F.linear(x, w, b) for w, b in zip(weights, biases)]
    return torch.cat(local, dim=-1) if gather else local
