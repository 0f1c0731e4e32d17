"""A stranger's P23 from the README contract alone: signed int8 levels -128..127, the range
per channel from a flattened movedim view, zero point rounded from qmin - min / scale."""

import torch

VARIABLE = "DRILL_P23_MODULE"
QMIN, QMAX = -128, 127


def _broadcast(values, axis, ndim):
    if axis is None:
        return values.reshape(())
    shape = [1] * ndim
    shape[axis] = -1
    return values.reshape(shape)


def quantize_affine(x, axis=None):
    if axis is not None and (type(axis) is not int or not -x.ndim <= axis < x.ndim):
        raise ValueError(f"axis {axis} is not a dimension of x")
    if not torch.is_tensor(x) or not x.dtype.is_floating_point:
        raise ValueError("x must be a float tensor")
    if x.is_meta or x.numel() == 0 or not torch.isfinite(x).all():
        raise ValueError("x must be non-empty and finite")
    x32 = x.to(torch.float32)
    rows = x32.reshape(1, -1) if axis is None else x32.movedim(axis, 0).reshape(x.shape[axis], -1)
    low = torch.minimum(rows.min(dim=1).values, torch.zeros(()))
    high = torch.maximum(rows.max(dim=1).values, torch.zeros(()))
    scale = (high - low) / (QMAX - QMIN)
    scale[scale == 0] = 1.0
    zero_point = torch.clamp(QMIN - torch.round(low / scale), QMIN, QMAX).to(torch.int32)
    s, z = _broadcast(scale, axis, x.ndim), _broadcast(zero_point, axis, x.ndim)
    q = torch.clamp(torch.round(x32 / s) + z, QMIN, QMAX).to(torch.int8)
    if axis is None:
        return q, scale.reshape(()), zero_point.reshape(())
    return q, scale, zero_point


def dequantize_affine(q, scale, zero_point, axis=None):
    if q.dtype.is_floating_point or q.dtype == torch.bool:
        raise TypeError(f"q must hold integer levels, got {q.dtype}")
    if axis is not None and (type(axis) is not int or not -q.ndim <= axis < q.ndim):
        raise ValueError(f"axis {axis} is not a dimension of q")
    if not torch.is_tensor(scale) or scale.is_meta:
        raise TypeError("scale must be a tensor holding values")
    if not (torch.isfinite(scale) & (scale > 0)).all():
        raise ValueError("every scale must be positive and finite")
    expected = 1 if axis is None else q.shape[axis]
    if scale.numel() != expected or zero_point.numel() != expected:
        raise ValueError(f"scale and zero_point need {expected} entries for axis={axis}")
    if axis is None:
        return (q.to(torch.float32) - zero_point.reshape(())) * scale.reshape(())
    s, z = _broadcast(scale, axis, q.ndim), _broadcast(zero_point, axis, q.ndim)
    return (q.to(torch.float32) - z) * s
