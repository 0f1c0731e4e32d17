"""A stranger's quantizer takes the range from min to max without widening it to hold zero,
so zero is not exactly representable and an all-zero tensor divides by a zero scale."""

import torch

VARIABLE = "DRILL_P23_MODULE"
EXPECTED_OWNER = "p23"


def quantize_affine(x, axis=None):
    if not x.is_floating_point():
        raise ValueError("x must be floating point")
    if not torch.isfinite(x).all():
        raise ValueError("x must be finite")
    if axis is not None and not -x.dim() <= axis < x.dim():
        raise ValueError("axis out of range")
    if axis is None:
        lo, hi = x.min(), x.max()
    else:
        moved = x.movedim(axis, 0).reshape(x.shape[axis], -1)
        shape = [1] * x.dim()
        shape[axis] = -1
        lo, hi = moved.min(1).values.reshape(shape), moved.max(1).values.reshape(shape)
    scale = (hi - lo) / 255
    zero_point = torch.round(-lo / scale)
    q = torch.clamp(torch.round(x / scale) + zero_point, 0, 255).to(torch.uint8)
    return q, scale.reshape(-1), zero_point.reshape(-1)


def dequantize_affine(q, scale, zero_point, axis=None):
    if axis is None:
        return (q.float() - zero_point) * scale
    if scale.numel() != q.shape[axis]:
        raise ValueError("scale needs one entry per channel of axis")
    shape = [1] * q.dim()
    shape[axis] = -1
    return (q.float() - zero_point.reshape(shape)) * scale.reshape(shape)
