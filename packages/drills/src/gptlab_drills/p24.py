"""P24 linear layer over int8 weights with one scale per output channel.

The float weight the int8 one stands for is `weight[o, i] * scales[o]`. Scaling commutes
with the sum over i, so the layer multiplies by the raw int8 values, accumulates in fp32
(exact for int8 values, and never overflowing half precision before the scale shrinks it),
then scales each output column and adds the bias. The result comes back in x's dtype.

Shapes: x [M, I] float; weight [O, I] int8; scales [O] float; bias [O] float or None.
Returns [M, O] in x's dtype.
"""

from __future__ import annotations

import torch
from torch import Tensor

from ._describe import described


def int8_linear(x: Tensor, weight: Tensor, scales: Tensor, bias: Tensor | None = None) -> Tensor:
    """(x @ weight^T) * scales + bias, accumulated in fp32, returned in x's dtype."""
    _check(x, weight, scales, bias)
    accumulated = x.float() @ weight.float().T  # [M, O]; fp32 accumulation, stated
    out = accumulated * scales.float()  # column o scaled by its own channel's scale
    if bias is not None:
        out = out + bias.float()
    return out.to(x.dtype)


def _check(x: Tensor, weight: Tensor, scales: Tensor, bias: Tensor | None) -> None:
    """Reject wrong dtypes and shapes before any arithmetic."""
    if not isinstance(x, Tensor) or x.dim() != 2 or not x.is_floating_point():
        raise ValueError(f"x must be a float [M, I] tensor, got {described(x)}")
    if not isinstance(weight, Tensor) or weight.dim() != 2 or weight.dtype != torch.int8:
        raise TypeError(f"weight must be an int8 [O, I] tensor, got {described(weight)}")
    out_features, in_features = weight.shape
    if x.shape[1] != in_features:
        raise ValueError(f"x has {x.shape[1]} in-features, weight has {in_features}")
    named = [("scales", scales)] + ([] if bias is None else [("bias", bias)])
    for name, vector in named:
        if not isinstance(vector, Tensor) or not vector.is_floating_point():
            raise ValueError(f"{name} must be a float tensor, got {described(vector)}")
        if tuple(vector.shape) != (out_features,):
            raise ValueError(f"{name} must have shape [{out_features}], got {list(vector.shape)}")
    for name, tensor in [("x", x), ("weight", weight), *named]:
        if tensor.device.type == "meta":  # no values to multiply or check
            raise ValueError(f"{name} is a meta tensor")
    devices = {x.device, weight.device, scales.device} | (
        {bias.device} if bias is not None else set()
    )
    if len(devices) != 1:
        raise ValueError(f"x, weight, scales and bias must share a device, got {devices}")
    if not bool(torch.isfinite(scales).all()):  # a NaN scale would poison its whole column
        raise ValueError("scales must be finite")


__all__ = ["int8_linear"]
