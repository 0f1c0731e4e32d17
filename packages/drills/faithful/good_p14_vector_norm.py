"""A stranger's P14 from the README alone: the root mean square from linalg.vector_norm in
at least fp32, eps checked first, the weight applied after casting back (HF-style order)."""

import math

import torch
from torch import nn

VARIABLE = "DRILL_P14_MODULE"


def _check_eps(eps):
    if not isinstance(eps, (int, float)) or isinstance(eps, bool) or not (0 < eps < math.inf):
        raise ValueError(f"eps must be finite and > 0, got {eps}")


def rms_norm(x, weight, eps=1e-6):
    _check_eps(eps)
    if not torch.is_tensor(x) or not torch.is_floating_point(x):
        raise TypeError("x must be a floating tensor")
    if x.ndim == 0 or x.shape[-1] == 0:
        raise ValueError(f"x needs a last dim of at least one channel, got {tuple(x.shape)}")
    if not torch.is_tensor(weight) or not torch.is_floating_point(weight):
        raise TypeError("weight must be a floating tensor")
    if weight.ndim != 1 or weight.numel() != x.shape[-1] or weight.device != x.device:
        raise ValueError(f"weight must be [{x.shape[-1]}] on x's device to match x's last dim")
    d, wide = x.shape[-1], torch.promote_types(x.dtype, torch.float32)
    rms = torch.linalg.vector_norm(x, dim=-1, keepdim=True, dtype=wide) / math.sqrt(d)
    normed = x.to(wide) / torch.sqrt(rms * rms + eps)
    return (weight.to(wide) * normed).to(x.dtype)


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        if not isinstance(dim, int) or isinstance(dim, bool) or dim <= 0:
            raise ValueError(f"dim must be a positive int, got {dim}")
        _check_eps(eps)
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        return rms_norm(hidden_states, self.weight, self.variance_epsilon)
