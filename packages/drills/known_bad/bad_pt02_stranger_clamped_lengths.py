"""A stranger's PT02 that clamps lengths into [0, T] instead of rejecting them."""

import torch

VARIABLE = "DRILL_PT02_MODULE"
EXPECTED_OWNER = "pt02"


def pack_valid(x, lengths):
    lengths = lengths.clamp(0, x.shape[1])
    valid = torch.arange(x.shape[1], device=x.device) < lengths[:, None]
    rows, cols = torch.nonzero(valid, as_tuple=True)
    return x[rows, cols], rows, cols


def restore_valid(flat, row_ids, col_ids, batch, time, fill):
    out = flat.new_full((batch, time, flat.shape[1]), fill)
    out[row_ids, col_ids] = flat
    return out
