"""A stranger's P06 from the README contract alone: torch.gather along time with an index
expanded over channels, validation of lengths before the shapes of hidden."""

import torch

VARIABLE = "DRILL_P06_MODULE"


def gather_last_token(hidden, lengths):
    if not torch.is_tensor(lengths) or lengths.dtype not in (torch.int32, torch.int64):
        raise TypeError("lengths must be an int32 or int64 tensor")
    if lengths.ndim != 1:
        raise ValueError("lengths must be a 1-D integer tensor")
    if not torch.is_tensor(hidden) or hidden.ndim != 3:
        raise ValueError("hidden must be [B, T, C]")
    b, t, c = hidden.shape
    if lengths.numel() != b:
        raise ValueError(f"lengths has {lengths.numel()} entries, hidden has {b} rows")
    if lengths.min() <= 0 or lengths.max() > t:
        raise ValueError(f"lengths must lie in 1..{t}")
    index = (lengths.long() - 1).view(b, 1, 1).expand(b, 1, c)
    return torch.gather(hidden, 1, index).squeeze(1)
