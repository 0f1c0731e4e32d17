"""A stranger's P23 from the kit's words alone: int8 levels, ranges through amin/amax over
every dim but the channel's (keepdim, so per tensor and per channel share one path), fp32
inside; no validation (the kit names none)."""

import torch

VARIABLE = "DRILL_P23_MODULE"

QMIN, QMAX = -128, 127


def _reduced_dims(x, axis):
    if axis is None:
        return tuple(range(x.dim()))
    return tuple(d for d in range(x.dim()) if d != axis % x.dim())


def _shaped(values, q, axis):
    if axis is None:
        return values
    view = [1] * q.dim()
    view[axis % q.dim()] = -1
    return values.reshape(view)


def quantize_affine(x, axis=None):
    wide = x.float()
    dims = _reduced_dims(wide, axis)
    # amin over dim=() would reduce every dim: a 1-D per-channel input is its own range
    lo = (wide.amin(dim=dims, keepdim=True) if dims else wide).clamp(max=0)
    hi = (wide.amax(dim=dims, keepdim=True) if dims else wide).clamp(min=0)
    scale = (hi - lo) / (QMAX - QMIN)
    scale = torch.where(scale > 0, scale, torch.ones_like(scale))
    zero_point = QMIN - torch.round(lo / scale)
    q = torch.clamp(torch.round(wide / scale) + zero_point, QMIN, QMAX).to(torch.int8)
    if axis is None:
        return q, scale.reshape(()), zero_point.reshape(()).long()
    return q, scale.flatten(), zero_point.flatten().long()


def dequantize_affine(q, scale, zero_point, axis=None):
    scale = _shaped(scale.float(), q, axis)
    zero_point = _shaped(zero_point.float(), q, axis)
    return (q.float() - zero_point) * scale
