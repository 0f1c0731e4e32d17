"""A stranger's P16 from the README alone: weights as Linear modules with the stated names,
applied through einsum, torch.split on the last dim, silu written out, width checked first."""

import torch
from torch import nn

VARIABLE = "DRILL_P16_MODULE"


class SwiGLU(nn.Module):
    def __init__(self, dim, hidden_dim):
        if not (isinstance(dim, int) and not isinstance(dim, bool) and dim > 0):
            raise ValueError(f"dim={dim!r} must be a positive int")
        if not (
            isinstance(hidden_dim, int) and not isinstance(hidden_dim, bool) and hidden_dim > 0
        ):
            raise ValueError(f"hidden_dim={hidden_dim!r} must be a positive int")
        super().__init__()
        self.h = hidden_dim
        self.gate_up_proj = nn.Linear(dim, 2 * hidden_dim, bias=False)
        self.down_proj = nn.Linear(hidden_dim, dim, bias=False)

    def forward(self, x):
        weight = self.gate_up_proj.weight
        if not torch.is_tensor(x) or x.dim() == 0:
            raise TypeError("x must be a tensor [..., dim]")
        if x.size(-1) != weight.size(1):
            raise ValueError(f"x: last dim {x.size(-1)} != {weight.size(1)}")
        if (x.dtype, x.device) != (weight.dtype, weight.device):
            raise ValueError(f"x must be {weight.dtype} on {weight.device}, like the weights")
        fused = torch.einsum("...c,fc->...f", x, self.gate_up_proj.weight)
        gate, up = torch.split(fused, [self.h, self.h], dim=-1)
        hidden = gate * torch.sigmoid(gate) * up
        return torch.einsum("...h,ch->...c", hidden, self.down_proj.weight)
