"""A stranger computes the keep mask in sorted order and applies it to the unsorted logits
(no scatter back to vocabulary order)."""

import torch

VARIABLE = "DRILL_P10_MODULE"
EXPECTED_OWNER = "p10"


def top_p_filter(logits, p):
    if not 0 < p <= 1:
        raise ValueError(f"p must be in (0, 1], got {p}")
    ordered, _ = torch.sort(logits, dim=-1, descending=True)
    probs = ordered.float().softmax(dim=-1)
    keep = (probs.cumsum(dim=-1) - probs) < p
    boundary = ordered.gather(-1, keep.sum(-1, keepdim=True) - 1)
    keep = keep | (ordered >= boundary)
    return logits.masked_fill(~keep, float("-inf"))
