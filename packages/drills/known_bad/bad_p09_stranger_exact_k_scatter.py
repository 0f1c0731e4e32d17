"""A stranger keeps exactly k tokens with topk + scatter: among tokens tied with the k-th
largest, the index order decides which survive."""

import torch

VARIABLE = "DRILL_P09_MODULE"
EXPECTED_OWNER = "p09"


def top_k_filter(logits, k):
    if not isinstance(k, int) or not 0 <= k <= logits.shape[-1]:
        raise ValueError(f"k must be an int in 0..V, got {k}")
    if k == 0:
        return logits.clone()
    keep = torch.zeros_like(logits, dtype=torch.bool)
    keep.scatter_(-1, logits.topk(k, dim=-1).indices, True)
    return logits.masked_fill(~keep, float("-inf"))
