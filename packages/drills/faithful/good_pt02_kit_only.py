"""A stranger's PT02 from the kit's words alone: the one rejection the kit names (lengths
outside [0, T]); pack by repeat_interleave of row ids and a cumulative-offset column,
restore by index_put_ into a flattened [batch * time, C] view; nothing else validated."""

import torch

VARIABLE = "DRILL_PT02_MODULE"


def pack_valid(x, lengths):
    if lengths.numel() and (int(lengths.min()) < 0 or int(lengths.max()) > x.shape[1]):
        raise ValueError(f"lengths must lie in [0, {x.shape[1]}]")
    lengths = lengths.long()
    rows = torch.repeat_interleave(torch.arange(len(lengths), device=x.device), lengths)
    offsets = torch.cumsum(lengths, 0) - lengths  # where each row starts in the pack
    cols = torch.arange(rows.numel(), device=x.device) - offsets[rows]
    return x[rows, cols], rows, cols


def restore_valid(flat, row_ids, col_ids, batch, time, fill):
    out = torch.full((batch * time, flat.shape[1]), fill, dtype=flat.dtype, device=flat.device)
    out.index_put_((row_ids.long() * time + col_ids.long(),), flat)
    return out.view(batch, time, flat.shape[1])
