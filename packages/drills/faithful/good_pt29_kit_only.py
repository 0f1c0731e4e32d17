"""A stranger's PT29 from the kit's words alone: the two rejections the kit names (invalid
ids, malformed offsets; a message naming the bad id), then one index_fill per row (a loop
over rows, never over V) with the dtype's lowest finite value as the declared sentinel;
nothing else validated."""

from itertools import pairwise

import torch

VARIABLE = "DRILL_PT29_MODULE"


def apply_allowed_tokens(logits, allowed_ids, offsets):
    B, V = logits.shape
    outside = allowed_ids[(allowed_ids < 0) | (allowed_ids >= V)]
    if outside.numel():
        raise ValueError(f"token id {int(outside[0])} is outside the vocabulary of {V}")
    bounds = offsets.tolist()
    if len(bounds) != B + 1 or bounds[0] != 0 or bounds[-1] != allowed_ids.numel():
        raise ValueError(f"offsets {bounds} do not cover {allowed_ids.numel()} ids in {B} rows")
    if any(a > b for a, b in pairwise(bounds)):
        raise ValueError(f"offsets {bounds} decrease")
    sentinel = torch.finfo(logits.dtype).min
    keep = torch.zeros(B, V, dtype=torch.bool, device=logits.device)
    for b in range(B):
        keep[b].index_fill_(0, allowed_ids[bounds[b] : bounds[b + 1]], True)
    return torch.where(keep, logits, torch.full_like(logits, sentinel))
