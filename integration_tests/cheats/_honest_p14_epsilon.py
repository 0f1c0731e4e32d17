"""The honest twin of the forged-signature cheat: the same P14, its module's argument
named `epsilon` where the kit says `eps`, and no forgery: what that work earns."""

import torch
from torch import nn


def rms_norm(x, weight, eps=1e-6):
    wide = x.float() if x.dtype in (torch.float16, torch.bfloat16) else x
    scale = torch.rsqrt(wide.pow(2).mean(dim=-1, keepdim=True) + eps)
    return (wide * scale * weight.to(wide.dtype)).to(x.dtype)


class RMSNorm(nn.Module):
    def __init__(self, dim, epsilon=1e-6):
        super().__init__()
        self.eps = epsilon
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return rms_norm(x, self.weight, self.eps)
