"""A stranger's P09 from the kit's words alone: k = 0 means no filtering, otherwise the k-th
largest value of each row from a descending sort is the threshold and torch.where keeps
what reaches it. The kit names no rejection: bad input is left to torch."""

import torch

VARIABLE = "DRILL_P09_MODULE"


def top_k_filter(logits, k):
    if k == 0:
        return logits.clone()
    ranked = logits.sort(dim=-1, descending=True).values
    threshold = ranked[..., k - 1 : k]
    return torch.where(logits >= threshold, logits, float("-inf"))
