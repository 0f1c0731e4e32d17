"""A stranger's PT04 over a flattened [B*T, *F] view whose bounds check is off: a negative
index reads the previous row's last steps, and T itself passes the check."""

import torch

VARIABLE = "DRILL_PT04_MODULE"
EXPECTED_OWNER = "pt04"


def batched_index_select(x, indices):
    B, T = x.shape[0], x.shape[1]
    if indices.shape[0] != B:
        raise ValueError("indices must have one row per batch row of x")
    if indices.numel() and int(indices.max()) > T:
        raise ValueError("indices past T")
    flat = x.reshape(B * T, *x.shape[2:])
    where = torch.arange(B, device=x.device)[:, None] * T + indices.long()
    return flat[where.reshape(-1)].reshape(B, indices.shape[1], *x.shape[2:])
