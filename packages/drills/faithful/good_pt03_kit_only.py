"""A stranger's PT03 from the kit's words alone: the rejections the kit names (malformed
offsets, a last offset other than N), then a plain loop over segments into preallocated
outputs (the kit's oracle is a loop; nothing asks for more); nothing else validated."""

import torch

VARIABLE = "DRILL_PT03_MODULE"


def segment_sum_max(values, offsets):
    bounds = [int(v) for v in offsets.tolist()]
    if bounds[0] != 0 or any(bounds[i + 1] < bounds[i] for i in range(len(bounds) - 1)):
        raise ValueError(f"offsets must start at 0 and never decrease: {bounds}")
    if bounds[-1] != values.shape[0]:
        raise ValueError(f"offsets must end at N={values.shape[0]}, got {bounds[-1]}")
    B, C = len(bounds) - 1, values.shape[1]
    sums = torch.zeros(B, C, dtype=values.dtype, device=values.device)
    maxes = torch.zeros(B, C, dtype=values.dtype, device=values.device)
    valid = torch.zeros(B, dtype=torch.bool, device=values.device)
    for b in range(B):
        segment = values[bounds[b] : bounds[b + 1]]
        if len(segment):
            sums[b] = segment.sum(0)
            maxes[b] = segment.max(0).values
            valid[b] = True
    return sums, maxes, valid
