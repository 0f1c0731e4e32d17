"""A stranger's P14 from the kit's words alone: rsqrt of the fp32 mean of squares (eps inside
the root), the weight applied in fp32 before the cast back, and a module that registers its
weight and calls the function. The kit names no rejection: bad input is left to torch."""

import torch
from torch import nn

VARIABLE = "DRILL_P14_MODULE"


def rms_norm(x, weight, eps=1e-6):
    wide = x.float() if x.dtype in (torch.float16, torch.bfloat16) else x
    scale = torch.rsqrt(wide.pow(2).mean(dim=-1, keepdim=True) + eps)
    return (wide * scale * weight.to(wide.dtype)).to(x.dtype)


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return rms_norm(x, self.weight, self.eps)
