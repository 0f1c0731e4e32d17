"""RMSNorm: x / rms(x) * weight, reduced in float32 whatever the input dtype."""

from __future__ import annotations

import torch
from torch import Tensor, nn

from .checks import check_features, check_float, check_size


class RMSNorm(nn.Module):
    """No mean subtraction, no bias. The square-mean is taken in fp32, or in the input's
    dtype when wider (in fp16 a squared activation above 256 overflows and one below
    2^-12 underflows; a float64 model stays float64); the normalized value returns to
    the input dtype before the gain, as Llama does."""

    def __init__(self, dim: int, eps: float) -> None:
        super().__init__()
        check_size("dim", dim)
        self.eps = check_float("rms_norm_eps", eps)
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: Tensor) -> Tensor:
        check_features("x", x, self.weight.shape[0])
        x32 = x.to(torch.promote_types(x.dtype, torch.float32))
        normed = x32 * torch.rsqrt(x32.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        return self.weight * normed.to(x.dtype)


__all__ = ["RMSNorm"]
