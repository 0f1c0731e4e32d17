"""A stranger gathers with a Python loop over rows and stacks the results (right values,
one indexing call per row)."""

import torch

VARIABLE = "DRILL_P06_MODULE"
EXPECTED_OWNER = "p06"


def gather_last_token(hidden, lengths):
    if hidden.dim() != 3:
        raise ValueError("hidden must be [B, T, C]")
    B, T, _ = hidden.shape
    if lengths.shape != (B,):
        raise ValueError("lengths must be [B]")
    if bool((lengths < 1).any()) or bool((lengths > T).any()):
        raise ValueError(f"lengths must be in 1..{T}")
    return torch.stack([hidden[b, lengths[b] - 1] for b in range(B)])
