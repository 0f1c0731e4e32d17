"""A stranger's PT01 from the kit's words alone: the four rejections the kit names (negative
starts, windows past the end, non-integer indices, another device), then one torch.gather
along time with a [B, width, 1] index expanded over the features; nothing else validated."""

import torch

VARIABLE = "DRILL_PT01_MODULE"


def gather_windows(x, starts, width):
    if starts.is_floating_point() or starts.dtype == torch.bool:
        raise TypeError(f"starts must hold integers, got {starts.dtype}")
    if not isinstance(width, int):
        raise TypeError(f"width must be an int, got {type(width).__name__}")
    if starts.device != x.device:
        raise ValueError(f"starts on {starts.device}, x on {x.device}")
    if starts.numel() and int(starts.min()) < 0:
        raise ValueError("starts holds a negative start")
    if starts.numel() and int(starts.max()) + width > x.shape[1]:
        raise ValueError("starts: a window of this width passes the end of x")
    index = (starts.long().unsqueeze(1) + torch.arange(width, device=x.device)).unsqueeze(2)
    return torch.gather(x, 1, index.expand(x.shape[0], width, x.shape[2]))
