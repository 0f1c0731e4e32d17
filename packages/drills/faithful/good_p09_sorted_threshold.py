"""A stranger's P09 from the README alone: sorts each row descending, reads the k-th value
as a threshold, writes -inf through torch.where; k checked before logits."""

import torch

VARIABLE = "DRILL_P09_MODULE"


def top_k_filter(logits, k):
    if type(k) is not int:
        raise TypeError(f"k must be an int, not {type(k).__name__}")
    if not torch.is_tensor(logits) or not logits.is_floating_point() or logits.ndim < 1:
        raise ValueError("logits must be a floating [B, V] tensor")
    vocab = logits.size(-1)
    if k < 0 or k > vocab:
        raise ValueError(f"k={k} must lie in 0..{vocab}")
    if k == 0:
        return logits.detach().clone()
    threshold = logits.sort(dim=-1, descending=True).values.narrow(-1, k - 1, 1)
    return torch.where(logits >= threshold, logits, torch.full_like(logits, float("-inf")))
