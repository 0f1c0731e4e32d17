"""PT33 reference custom operator (transfer case; owner P27).

RMSNorm registered as a functional custom operator, `gptlab::rms_norm`, around a plain
PyTorch reference:

    out = x * rsqrt(mean(x**2 over the last dim) + eps) * weight      (in float32 inside)

Functional means the schema declares no mutation and no aliasing
(`mutates_args=()`): the result is new, contiguous memory. The fake implementation tells
the compiler the result's metadata without computing it (size and dtype of x, contiguous
strides, storage offset 0, x's device) and rejects the same invalid shapes the real one
does, with the same error, so a shape error surfaces the same way traced or eager.

Shapes: x [..., C] floating (at least 1-D); weight [C] -> [..., C] with x's dtype.
"""

from __future__ import annotations

import torch
from torch import Tensor


def _check(x: Tensor, weight: Tensor, eps: float) -> None:
    """The shape and value rules, shared by the real and the fake implementation."""
    if x.dim() < 1 or not x.is_floating_point():
        raise ValueError(f"x must be a floating tensor [..., C], got {x.dim()}-D {x.dtype}")
    if weight.shape != x.shape[-1:]:
        raise ValueError(f"weight must have shape [{x.shape[-1]}], got {list(weight.shape)}")
    if not eps > 0:
        raise ValueError(f"eps must be > 0, got {eps}")


def rms_norm_reference(x: Tensor, weight: Tensor, eps: float) -> Tensor:
    """The plain PyTorch computation the operator wraps."""
    x32 = x.float()
    scale = torch.rsqrt(x32.pow(2).mean(dim=-1, keepdim=True) + eps)
    return (x32 * scale * weight.float()).to(x.dtype).contiguous()


@torch.library.custom_op("gptlab::rms_norm", mutates_args=())
def rms_norm(x: Tensor, weight: Tensor, eps: float) -> Tensor:
    """gptlab::rms_norm(Tensor x, Tensor weight, float eps) -> Tensor."""
    _check(x, weight, eps)
    return rms_norm_reference(x, weight, eps)


@rms_norm.register_fake
def _rms_norm_fake(x: Tensor, weight: Tensor, eps: float) -> Tensor:
    _check(x, weight, eps)
    return x.new_empty(x.shape)  # contiguous, offset 0, x's dtype and device


__all__ = ["rms_norm", "rms_norm_reference"]
