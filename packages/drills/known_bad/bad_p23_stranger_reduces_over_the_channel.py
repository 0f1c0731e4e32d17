"""A stranger's per-channel quantizer reduces along `axis` itself (amin(dim=axis)), giving
one scale per position of the other dims instead of one per channel."""

import torch

VARIABLE = "DRILL_P23_MODULE"
EXPECTED_OWNER = "p23"


def _range(x, axis):
    if axis is None:
        return x.min().clamp(max=0), x.max().clamp(min=0)
    return x.amin(dim=axis, keepdim=True).clamp(max=0), x.amax(dim=axis, keepdim=True).clamp(min=0)


def quantize_affine(x, axis=None):
    if not torch.is_floating_point(x) or not bool(torch.isfinite(x).all()):
        raise ValueError("x must be a finite floating-point tensor")
    if axis is not None and not -x.dim() <= axis < x.dim():
        raise ValueError(f"axis {axis} out of range")
    lo, hi = _range(x.float(), axis)
    scale = torch.where(hi > lo, (hi - lo) / 255, torch.ones_like(hi))
    zero_point = -torch.round(lo / scale)
    q = (torch.round(x / scale) + zero_point).clamp(0, 255).to(torch.uint8)
    return q, scale, zero_point


def dequantize_affine(q, scale, zero_point, axis=None):
    return (q.float() - zero_point) * scale
