"""A stranger's RMSNorm keeps its weight as a plain tensor attribute: not a parameter, not in
the state dict, not moved by .to(), never trained."""

import torch
from torch import nn

VARIABLE = "DRILL_P14_MODULE"
EXPECTED_OWNER = "p14"


def rms_norm(x, weight, eps=1e-6):
    if not x.is_floating_point() or x.shape[-1:] != weight.shape:
        raise ValueError("x must be floating point with last dim matching weight")
    if not eps > 0:
        raise ValueError("eps must be positive")
    h = x.float()
    h = h * torch.rsqrt(h.square().mean(-1, keepdim=True) + eps)
    return (h * weight.float()).type_as(x)


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        if dim < 1:
            raise ValueError(f"dim must be >= 1, got {dim}")
        self.eps = eps
        self.weight = torch.ones(dim)

    def forward(self, x):
        return rms_norm(x, self.weight.to(x.device), self.eps)
