"""A stranger gates with sigmoid (GLU) instead of silu (SwiGLU): sigmoid(gate) * up."""

import torch
from torch import nn

VARIABLE = "DRILL_P16_MODULE"
EXPECTED_OWNER = "p16"


class SwiGLU(nn.Module):
    def __init__(self, dim, hidden_dim):
        super().__init__()
        if min(dim, hidden_dim) < 1:
            raise ValueError(f"dim and hidden_dim must be >= 1, got {dim}, {hidden_dim}")
        self.hidden_dim = hidden_dim
        self.gate_up_proj = nn.Linear(dim, 2 * hidden_dim, bias=False)
        self.down_proj = nn.Linear(hidden_dim, dim, bias=False)

    def forward(self, x):
        if x.shape[-1] != self.gate_up_proj.in_features:
            raise ValueError("x has the wrong last dim")
        gate, up = torch.split(self.gate_up_proj(x), self.hidden_dim, dim=-1)
        return self.down_proj(torch.sigmoid(gate) * up)
