"""P23 affine (asymmetric) 8-bit quantization, per tensor or per channel.

x ~ (q - zero_point) * scale with q in 0..255 (uint8). The range is widened to hold 0, so
zero is exact: it quantizes to the zero point and comes back as 0.0. An all-zero tensor
(or channel) has no range; its scale is defined as 1.0 with zero point 0, so it still
round-trips exactly. Rounding then clamping keeps every q inside 0..255 (a value can round
half a step past the top), so each element comes back within scale / 2 of where it was.

Shapes: x [...] float; axis None (scale, zero_point are 0-D) or an int (scale, zero_point
are [x.shape[axis]], one pair per channel). q has x's shape.
"""

from __future__ import annotations

import torch
from torch import Tensor

QMIN, QMAX = 0, 255


def quantize_affine(x: Tensor, axis: int | None = None) -> tuple[Tensor, Tensor, Tensor]:
    """x -> (q uint8, scale float32, zero_point int64), per tensor or per channel of `axis`."""
    _check_input(x, axis)
    xf = x.float()
    # Reduce every dim but the channel dim (all of them per tensor), keeping dims to broadcast.
    dims = [d for d in range(x.dim()) if axis is None or d != axis % x.dim()]
    low = xf.amin(dim=dims, keepdim=True).clamp(max=0.0) if dims else xf.clamp(max=0.0)
    high = xf.amax(dim=dims, keepdim=True).clamp(min=0.0) if dims else xf.clamp(min=0.0)
    scale = (high - low) / (QMAX - QMIN)
    scale = torch.where(scale > 0, scale, torch.ones_like(scale))  # all-zero: defined as 1
    zero_point = (QMIN - torch.round(low / scale)).clamp(QMIN, QMAX)
    q = (torch.round(xf / scale) + zero_point).clamp(QMIN, QMAX).to(torch.uint8)
    return q, _squeeze(scale, axis), _squeeze(zero_point, axis).long()


def dequantize_affine(
    q: Tensor, scale: Tensor, zero_point: Tensor, axis: int | None = None
) -> Tensor:
    """(q - zero_point) * scale as float32, broadcasting per channel along `axis`."""
    _check_params(q, scale, zero_point, axis)
    shape = [1] * q.dim()
    if axis is not None:
        shape[axis % q.dim()] = -1
    return (q.float() - zero_point.float().reshape(shape)) * scale.float().reshape(shape)


def _squeeze(per_channel: Tensor, axis: int | None) -> Tensor:
    return per_channel.reshape(-1) if axis is not None else per_channel.reshape(())


def _check_axis(name: str, tensor: Tensor, axis: int | None) -> None:
    if axis is None:
        return
    if isinstance(axis, bool) or not isinstance(axis, int):
        raise ValueError(f"axis must be an int or None, got {type(axis).__name__}")
    if not -tensor.dim() <= axis < tensor.dim():
        raise ValueError(f"axis {axis} is out of range for {name} of {tensor.dim()} dims")


def _check_input(x: Tensor, axis: int | None) -> None:
    if not isinstance(x, Tensor) or not x.is_floating_point():
        raise TypeError(f"x must be a floating-point tensor, got {getattr(x, 'dtype', x)}")
    _check_axis("x", x, axis)
    if x.device.type == "meta":  # no values: no range
        raise ValueError("x is a meta tensor: there is no range to quantize")
    if x.numel() == 0:
        raise ValueError("x is empty: there is no range to quantize")
    if not bool(torch.isfinite(x).all()):
        raise ValueError("x holds inf or nan: its range is undefined")


def _check_params(q: Tensor, scale: Tensor, zero_point: Tensor, axis: int | None) -> None:
    if not isinstance(q, Tensor) or q.is_floating_point() or q.dtype == torch.bool:
        raise TypeError(f"q must be an integer tensor, got {getattr(q, 'dtype', q)}")
    _check_axis("q", q, axis)
    channels = () if axis is None else (q.shape[axis],)
    for name, param in (("q", q), ("scale", scale), ("zero_point", zero_point)):
        if not isinstance(param, Tensor) or param.device.type == "meta":
            raise TypeError(f"{name} must be a tensor with values, got {type(param).__name__}")
        if name != "q" and tuple(param.shape) != channels:
            raise ValueError(f"{name} must have shape {list(channels)} for axis={axis}")
    if not bool(((scale > 0) & torch.isfinite(scale)).all()):  # NaN fails both
        raise ValueError("scale must be positive and finite")


__all__ = ["dequantize_affine", "quantize_affine"]
