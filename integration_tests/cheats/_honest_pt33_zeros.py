"""The honest twin of the PT33 cheat: an operator of zeros, registered as it is."""

import torch


@torch.library.custom_op("gptlab::rms_norm", mutates_args=())
def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    return torch.zeros_like(x)


@rms_norm.register_fake
def _(x, weight, eps):
    return torch.empty_like(x)
