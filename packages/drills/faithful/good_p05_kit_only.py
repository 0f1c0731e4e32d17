"""A stranger's P05 from the kit's words alone: query and key slot grids compared by
broadcasting, blocked entries filled with -inf; the one rejection the README's kit clauses
name (a row with zero valid keys), the rest left to torch."""

import torch

VARIABLE = "DRILL_P05_MODULE"


def causal_length_mask(lengths, query_length, key_length=None, dtype=torch.float32):
    if key_length is None:
        key_length = query_length
    if bool((lengths == 0).any()):
        raise ValueError("lengths: a row has zero valid keys")
    device = lengths.device
    query_slot = torch.arange(query_length, device=device)[:, None] + (key_length - query_length)
    key_slot = torch.arange(key_length, device=device)[None, :]
    causal = key_slot <= query_slot
    valid = key_slot[None] < lengths[:, None, None]
    allowed = (causal[None] & valid)[:, None]
    mask = torch.zeros(allowed.shape, dtype=dtype, device=device)
    return mask.masked_fill(~allowed, float("-inf"))
