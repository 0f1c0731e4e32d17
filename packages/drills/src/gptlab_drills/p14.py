"""P14 RMSNorm: scale each vector by the inverse root of its mean square, then by a weight.

    rms_norm(x, weight, eps) = x / sqrt(mean(x^2 over the last dim) + eps) * weight

No mean is subtracted and there is no bias (LayerNorm without centring). The reduction and
the scaling run in at least fp32 (fp64 stays fp64): squares of fp16 values overflow past 256
and flush to zero below ~2e-4. The result is returned in x's dtype.

Shapes: x [..., D] (any leading dims, D >= 1); weight [D]; returns [..., D] (x's dtype).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from ._describe import described


def rms_norm(x: Tensor, weight: Tensor, eps: float = 1e-6) -> Tensor:
    """x * rsqrt(mean(x^2, -1) + eps) * weight, reduced in >= fp32, returned in x's dtype."""
    _check(x, weight, eps)
    wide = torch.promote_types(x.dtype, torch.float32)
    xw = x.to(wide)
    inverse_rms = torch.rsqrt(xw.pow(2).mean(dim=-1, keepdim=True) + eps)  # [..., 1]
    return (xw * inverse_rms * weight.to(wide)).to(x.dtype)


class RMSNorm(nn.Module):
    """A learnable per-channel scale `weight` [dim] (ones at start) around `rms_norm`."""

    def __init__(self, dim: int, eps: float = 1e-6) -> None:
        super().__init__()
        if isinstance(dim, bool) or not isinstance(dim, int) or dim < 1:
            raise ValueError(f"dim must be a positive int, got {dim!r}")
        _check_eps(eps)
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))  # registered: saved, moved, trained

    def forward(self, x: Tensor) -> Tensor:
        return rms_norm(x, self.weight, self.eps)


def _check(x: Tensor, weight: Tensor, eps: float) -> None:
    for name, tensor in (("x", x), ("weight", weight)):
        if not isinstance(tensor, Tensor) or not tensor.is_floating_point():
            raise ValueError(f"{name} must be a floating-point tensor, got {described(tensor)}")
    if x.dim() < 1 or x.shape[-1] < 1:
        raise ValueError(f"x must have a last dim of size >= 1, got {tuple(x.shape)}")
    if weight.shape != x.shape[-1:]:
        raise ValueError(f"weight {tuple(weight.shape)} must be [D], x's last dim {x.shape[-1]}")
    if weight.device != x.device:
        raise ValueError(f"weight is on {weight.device} but x is on {x.device}")
    _check_eps(eps)


def _check_eps(eps: float) -> None:
    if isinstance(eps, bool) or not isinstance(eps, int | float) or not math.isfinite(eps):
        raise ValueError(f"eps must be a finite positive number, got {eps!r}")
    if eps <= 0:
        raise ValueError(f"eps must be positive, got {eps!r}")


__all__ = ["RMSNorm", "rms_norm"]
