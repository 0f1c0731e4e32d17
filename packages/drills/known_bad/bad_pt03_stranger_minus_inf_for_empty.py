"""A stranger's PT03 that fills an empty segment's max with -inf (the dtype's lowest for
integers) instead of the contract's 0, and marks validity by comparing with that fill."""

import torch

VARIABLE = "DRILL_PT03_MODULE"
EXPECTED_OWNER = "pt03"


def segment_sum_max(values, offsets):
    if int(offsets[0]) != 0 or bool((offsets.diff() < 0).any()):
        raise ValueError("offsets must start at 0 and never decrease")
    if int(offsets[-1]) != values.shape[0]:
        raise ValueError("offsets must end at N")
    counts = offsets.diff().long()
    B, C = counts.numel(), values.shape[1]
    segment = torch.repeat_interleave(torch.arange(B, device=values.device), counts)
    low = -torch.inf if values.is_floating_point() else torch.iinfo(values.dtype).min
    sums = values.new_zeros(B, C).index_add(0, segment, values)
    maxes = values.new_full((B, C), low)
    maxes = maxes.scatter_reduce(0, segment[:, None].expand_as(values), values, "amax")
    return sums, maxes, (maxes != low).any(1)
