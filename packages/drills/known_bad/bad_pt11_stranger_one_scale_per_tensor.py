"""A stranger's quantizer with one scale for the whole tensor, repeated per row: a small row
next to a large one is rounded to a handful of levels."""

import torch

VARIABLE = "DRILL_PT11_MODULE"
EXPECTED_OWNER = "pt11"


def quantize_per_token(x):
    if x.dtype not in (torch.float16, torch.bfloat16, torch.float32):
        raise TypeError(f"x must be a float tensor, got {x.dtype}")
    if not torch.isfinite(x).all():
        raise ValueError("x holds NaN or inf")
    wide = x.float()
    amax = wide.abs().amax() if wide.numel() else torch.zeros((), device=x.device)
    scale = torch.where(amax > 0, amax / 127, torch.ones_like(amax))
    scales = scale.expand(*x.shape[:-1], 1).clone()
    q = (wide / scales).round().clamp(-127, 127).to(torch.int8)
    return q, scales


def dequantize_per_token(q, scales):
    return q.float() * scales
