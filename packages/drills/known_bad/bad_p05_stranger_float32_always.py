"""A stranger's mask is right but always float32 (-1e9 fill), whatever dtype was asked for."""

import torch

VARIABLE = "DRILL_P05_MODULE"
EXPECTED_OWNER = "p05"


def causal_length_mask(lengths, query_length, key_length=None, dtype=torch.float32):
    S = query_length if key_length is None else key_length
    L = query_length
    if lengths.dim() != 1 or bool((lengths < 1).any()) or bool((lengths > S).any()):
        raise ValueError("lengths must be [B] with values in 1..key_length")
    if L > S:
        raise ValueError("query_length must not exceed key_length")
    j = torch.arange(S)
    i = torch.arange(L) + (S - L)
    ok = (j[None, :] <= i[:, None])[None] & (j[None, None, :] < lengths[:, None, None])
    return ((~ok).float() * -1e9).unsqueeze(1)
