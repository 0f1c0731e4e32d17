"""A stranger's PT01 that computes flat offsets b*T*C + t*C + c into x's storage: right for a
contiguous x, wrong for any transposed, strided or sliced view."""

import torch

VARIABLE = "DRILL_PT01_MODULE"
EXPECTED_OWNER = "pt01"


def gather_windows(x, starts, width):
    if starts.dtype.is_floating_point or starts.dtype == torch.bool or not isinstance(width, int):
        raise ValueError("starts and width must be integers")
    if starts.device != x.device:
        raise ValueError("starts must be on x's device")
    B, T, C = x.shape
    if bool((starts < 0).any()) or bool((starts + width > T).any()):
        raise ValueError("starts: a window leaves [0, T)")
    steps = starts.long()[:, None] + torch.arange(width, device=x.device)  # [B, width]
    flat = torch.arange(B, device=x.device)[:, None, None] * (T * C)
    flat = flat + steps[:, :, None] * C + torch.arange(C, device=x.device)
    storage = x.as_strided((max(B * T * C, 1),), (1,)) if B * T * C else x.reshape(-1)
    return storage[flat.reshape(-1)].reshape(B, width, C)
