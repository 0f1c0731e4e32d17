"""A stranger's P16 from the kit's words alone: two bias-free nn.Linear layers, the fused
output cut with chunk on the feature dim; no validation (the kit names none), the rest left
to torch."""

import torch
from torch import nn

VARIABLE = "DRILL_P16_MODULE"


class SwiGLU(nn.Module):
    def __init__(self, dim, hidden_dim):
        super().__init__()
        self.gate_up_proj = nn.Linear(dim, 2 * hidden_dim, bias=False)
        self.down_proj = nn.Linear(hidden_dim, dim, bias=False)

    def forward(self, x):
        gate, up = self.gate_up_proj(x).chunk(2, dim=-1)
        return self.down_proj(gate * torch.sigmoid(gate) * up)
