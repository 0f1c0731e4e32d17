"""PT12 autocast-safe normalization (transfer case; owner P14).

normalize_project(x, weight, eps) = RMS-normalize x's rows, then project them by weight:

    normed = x / sqrt(mean(x ** 2, -1) + eps)        statistics in float32, autocast off
    out    = F.linear(normed.to(x.dtype), weight)    under whatever autocast surrounds it

The statistics never run in half precision (fp16 squares overflow past 256 and underflow
below 2e-4): x is widened to float32 inside an autocast-disabled block. The projection is
left to the caller's autocast. Output dtype: with autocast enabled for x's device type,
autocast's dtype (F.linear is one of its lower-precision ops); without it, x's dtype (the
weight must then have x's dtype). Nothing is created on the CPU or read back to the host:
every tensor lives on x's device.

Shapes: x [*, H] (fp16, bf16 or fp32; H >= 1), weight [O, H], eps a float > 0 -> [*, O].
"""

from __future__ import annotations

import contextlib
import math

import torch
import torch.nn.functional as F
from torch import Tensor

from ._describe import described

FLOATS = (torch.float16, torch.bfloat16, torch.float32)


def normalize_project(x: Tensor, weight: Tensor, eps: float) -> Tensor:
    """F.linear(rms_norm(x) in float32 stats, weight) under the surrounding autocast."""
    _check(x, weight, eps)
    with _autocast_off(x.device.type):
        wide = x.float()
        inverse = torch.rsqrt(wide.pow(2).mean(dim=-1, keepdim=True) + eps)
        normed = (wide * inverse).to(x.dtype)
    return F.linear(normed, weight)


def _autocast_off(device_type: str) -> contextlib.AbstractContextManager[object]:
    """Autocast disabled where the device type has one (meta has none)."""
    if torch.amp.is_autocast_available(device_type):
        return torch.autocast(device_type, enabled=False)
    return contextlib.nullcontext()


def _check(x: Tensor, weight: Tensor, eps: float) -> None:
    for name, value in (("x", x), ("weight", weight)):
        if not isinstance(value, Tensor) or value.dtype not in FLOATS:
            raise ValueError(f"{name} must be an fp16/bf16/fp32 tensor, got {described(value)}")
    if isinstance(eps, bool) or not isinstance(eps, (int, float)):
        raise ValueError(f"eps must be a float, got {described(eps)}")
    if not (math.isfinite(eps) and eps > 0):
        raise ValueError(f"eps must be a finite number > 0, got {eps}")
    if x.dim() < 1 or x.shape[-1] == 0 or weight.dim() != 2 or weight.shape[1] != x.shape[-1]:
        raise ValueError(f"x {tuple(x.shape)}, weight {tuple(weight.shape)}: not [*, H], [O, H]")
    if weight.device != x.device:
        raise ValueError(f"weight is on {weight.device}, x on {x.device}")
    autocast = torch.amp.is_autocast_available(x.device.type)
    if weight.dtype != x.dtype and not (autocast and torch.is_autocast_enabled(x.device.type)):
        raise ValueError(f"weight is {weight.dtype}, x {x.dtype}, and no autocast decides")


__all__ = ["normalize_project"]
