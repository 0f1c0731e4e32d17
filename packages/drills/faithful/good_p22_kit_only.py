"""A stranger's P22 from the kit's words alone: live row indices from nonzero, one
index_select per field, the map from a cumulative sum; no validation (the kit names none)."""

import torch

VARIABLE = "DRILL_P22_MODULE"


def compact_live_rows(fields, live):
    rows = live.nonzero().flatten()
    compacted = {name: field.index_select(0, rows) for name, field in fields.items()}
    ranks = live.long().cumsum(0) - 1
    old_to_new = torch.where(live, ranks, torch.full_like(ranks, -1))
    return compacted, old_to_new
