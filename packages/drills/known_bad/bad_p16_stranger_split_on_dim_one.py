"""A stranger splits the fused gate-up output with `chunk(2, dim=1)`: right for [N, 2H]
inputs, but on [B, T, 2H] it splits the tokens instead of the features."""

import torch.nn.functional as F
from torch import nn

VARIABLE = "DRILL_P16_MODULE"
EXPECTED_OWNER = "p16"


class SwiGLU(nn.Module):
    def __init__(self, dim, hidden_dim):
        super().__init__()
        if dim <= 0:
            raise ValueError("dim must be positive")
        if hidden_dim <= 0:
            raise ValueError("hidden_dim must be positive")
        self.dim = dim
        self.gate_up_proj = nn.Linear(dim, 2 * hidden_dim, bias=False)
        self.down_proj = nn.Linear(hidden_dim, dim, bias=False)

    def forward(self, x):
        if x.shape[-1] != self.dim:
            raise ValueError(f"x has width {x.shape[-1]}, expected {self.dim}")
        gate, up = self.gate_up_proj(x).chunk(2, dim=1)
        return self.down_proj(F.silu(gate) * up)
