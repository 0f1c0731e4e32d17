"""A stranger's P08 from the README alone: exp(x - logsumexp(x)) in fp32, greedy via
argmax == arange, temperature checked first."""

import math

import torch

VARIABLE = "DRILL_P08_MODULE"


def temperature_probs(logits, temperature):
    if type(temperature) not in (int, float) or not math.isfinite(temperature):
        raise ValueError(f"temperature must be a finite number, got {temperature!r}")
    if temperature < 0:
        raise ValueError(f"temperature must be >= 0, got {temperature}")
    if not torch.is_tensor(logits) or not torch.is_floating_point(logits):
        raise ValueError("logits must be a floating-point tensor")
    if logits.ndim == 0 or logits.shape[-1] == 0:
        raise ValueError(f"logits must have a token axis with tokens, got {tuple(logits.shape)}")
    x = logits.to(torch.float32)
    if temperature == 0:
        vocab = torch.arange(x.shape[-1], device=x.device)
        return (vocab == x.argmax(dim=-1, keepdim=True)).to(torch.float32)
    x = x / temperature
    return torch.exp(x - torch.logsumexp(x, dim=-1, keepdim=True))
