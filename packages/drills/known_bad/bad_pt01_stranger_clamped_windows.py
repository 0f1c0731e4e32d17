"""A stranger's PT01 that clamps every window into [0, T) instead of rejecting it: a negative
start or a window past the end silently reads other steps."""

import torch

VARIABLE = "DRILL_PT01_MODULE"
EXPECTED_OWNER = "pt01"


def gather_windows(x, starts, width):
    if starts.dtype.is_floating_point or starts.dtype == torch.bool or not isinstance(width, int):
        raise ValueError("starts and width must be integers")
    if starts.device != x.device:
        raise ValueError("starts must be on x's device")
    T = x.shape[1]
    first = starts.long().clamp(0, max(T - width, 0))
    steps = first[:, None] + torch.arange(width, device=x.device)
    return torch.gather(x, 1, steps[:, :, None].expand(-1, -1, x.shape[2]))
