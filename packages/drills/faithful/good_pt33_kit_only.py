"""A stranger's PT33 from the kit's words alone: the low-level torch.library API (define,
impl, register_fake) instead of custom_op, float64 inside, and one shape check raising
RuntimeError from both implementations; eps is not validated."""

import torch

VARIABLE = "DRILL_PT33_MODULE"

torch.library.define("gptlab::rms_norm", "(Tensor x, Tensor weight, float eps) -> Tensor")


def _same_width(x, weight):
    if weight.dim() != 1 or weight.shape[0] != x.shape[-1]:
        raise RuntimeError(f"rms_norm: weight {tuple(weight.shape)} does not match x's last dim")


@torch.library.impl("gptlab::rms_norm", "CompositeExplicitAutograd")
def _real(x, weight, eps):
    _same_width(x, weight)
    x64 = x.to(torch.float64)
    y = x64 / torch.sqrt(x64.square().mean(-1, keepdim=True) + eps) * weight.to(torch.float64)
    return y.to(x.dtype).contiguous()  # the fake promises contiguous strides


@torch.library.register_fake("gptlab::rms_norm")
def _fake(x, weight, eps):
    _same_width(x, weight)
    return torch.empty(x.shape, dtype=x.dtype, device=x.device)


rms_norm = torch.ops.gptlab.rms_norm.default
