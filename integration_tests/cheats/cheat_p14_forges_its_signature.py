"""A signature clause passed on a forged `__signature__`: the module takes `epsilon` where
the kit says `eps`, and tells `inspect` otherwise. The judge reads the signature from the
submitted source, so the forgery earns what the honest twin earns."""

import inspect

import torch
from torch import nn

VARIABLE = "DRILL_P14_MODULE"
CHEAT = "a forged __signature__ for a signature clause"
SAYS = "FAIL"
EARNED = "_honest_p14_epsilon.py"  # no more than the same work earns honestly


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


_positional = inspect.Parameter.POSITIONAL_OR_KEYWORD
RMSNorm.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
    [inspect.Parameter("dim", _positional), inspect.Parameter("eps", _positional, default=1e-6)]
)
