"""A stranger fills forbidden tokens with -1e9 instead of -inf: they keep a sliver of
probability next to logits of that size, and the result is not the contract's -inf."""

import torch

VARIABLE = "DRILL_P07_MODULE"
EXPECTED_OWNER = "p07"


def masked_logits(logits, allowed):
    if allowed.dtype != torch.bool or allowed.shape != logits.shape:
        raise ValueError("allowed must be a bool mask of logits' shape")
    if not logits.is_floating_point():
        raise ValueError("logits must be floating point")
    if not allowed.any(dim=-1).all():
        raise ValueError("allowed forbids a whole row")
    return torch.where(allowed, logits, torch.full_like(logits, -1e9))
