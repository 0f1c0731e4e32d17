"""A stranger's PT03 that loops over segments and never checks the offsets: a decreasing
offset reads as an empty segment, and rows past the last offset are dropped."""

import torch

VARIABLE = "DRILL_PT03_MODULE"
EXPECTED_OWNER = "pt03"


def segment_sum_max(values, offsets):
    bounds = offsets.tolist()
    B, C = len(bounds) - 1, values.shape[1]
    sums = torch.zeros(B, C, dtype=values.dtype, device=values.device)
    maxes = torch.zeros(B, C, dtype=values.dtype, device=values.device)
    valid = torch.zeros(B, dtype=torch.bool, device=values.device)
    for b in range(B):
        rows = values[bounds[b] : bounds[b + 1]]
        if rows.shape[0]:
            sums[b], maxes[b], valid[b] = rows.sum(0), rows.amax(0), True
    return sums, maxes, valid
