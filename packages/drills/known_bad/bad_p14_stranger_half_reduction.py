"""A stranger reduces the mean square in the input's dtype: fp16 squares overflow for large
values and flush to zero for tiny ones."""

import torch
from torch import nn

VARIABLE = "DRILL_P14_MODULE"
EXPECTED_OWNER = "p14"


def rms_norm(x, weight, eps=1e-6):
    if not (isinstance(eps, float | int) and eps > 0):
        raise ValueError("eps must be > 0")
    if not x.is_floating_point():
        raise TypeError("x must be floating point")
    if weight.shape != x.shape[-1:]:
        raise ValueError(f"weight shape {tuple(weight.shape)} != x's last dim {x.shape[-1]}")
    variance = x.pow(2).mean(-1, keepdim=True)
    return x * torch.rsqrt(variance + eps) * weight.to(x.dtype)


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        if dim <= 0:
            raise ValueError("dim must be positive")
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return rms_norm(x, self.weight, self.eps)
