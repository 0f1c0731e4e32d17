"""A stranger's PT02 whose restore starts from zeros: `fill` is accepted and ignored."""

import torch

VARIABLE = "DRILL_PT02_MODULE"
EXPECTED_OWNER = "pt02"


def pack_valid(x, lengths):
    if bool(((lengths < 0) | (lengths > x.shape[1])).any()):
        raise ValueError("lengths must lie in [0, T]")
    valid = torch.arange(x.shape[1], device=x.device) < lengths[:, None]
    rows, cols = torch.nonzero(valid, as_tuple=True)
    return x[rows, cols], rows, cols


def restore_valid(flat, row_ids, col_ids, batch, time, fill):
    out = torch.zeros(batch, time, flat.shape[1], dtype=flat.dtype, device=flat.device)
    out[row_ids, col_ids] = flat
    return out
