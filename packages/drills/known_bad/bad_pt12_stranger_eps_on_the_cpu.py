"""A stranger's version that keeps eps as a CPU tensor of shape [1] and never checks it:
eps = 0 is taken (a zero row divides by 0), and on another device the add fails."""

import torch
import torch.nn.functional as F

VARIABLE = "DRILL_PT12_MODULE"
EXPECTED_OWNER = "pt12"


def normalize_project(x, weight, eps):
    eps_t = torch.tensor([float(eps)])
    with (
        torch.autocast(x.device.type, enabled=False) if x.device.type != "meta" else torch.no_grad()
    ):
        wide = x.float()
        var = wide.pow(2).mean(-1, keepdim=True)
        normed = (wide * torch.rsqrt(var + eps_t)).to(x.dtype)
    return F.linear(normed, weight)
