"""A stranger's shortcut slices the batch when the live rows form a prefix, returning views
of the old rows where new tensors were promised."""

import torch

VARIABLE = "DRILL_P22_MODULE"
EXPECTED_OWNER = "p22"


def compact_live_rows(fields, live):
    if not isinstance(live, torch.Tensor) or live.dtype != torch.bool or live.ndim != 1:
        raise ValueError("live must be a bool [B] mask")
    if any(f.shape[0] != live.shape[0] for f in fields.values()):
        raise ValueError("every field needs one row per entry of live")
    n = int(live.sum())
    old_to_new = torch.where(live, live.long().cumsum(0) - 1, -1)
    if bool(live[:n].all()):  # live rows are already the prefix: no copy needed
        return {name: field[:n] for name, field in fields.items()}, old_to_new
    return {name: field[live] for name, field in fields.items()}, old_to_new
