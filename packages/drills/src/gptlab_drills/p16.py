"""P16 SwiGLU MLP with a fused gate-up projection.

    gate, up = split(gate_up_proj(x), last dim)      # gate first, then up
    out = down_proj(silu(gate) * up)                 # silu(g) = g * sigmoid(g)

One [2H, C] matmul replaces two [H, C] ones; the split is on the feature (last) dim, never
on a token dim. No biases (Llama-style).

Shapes: x [..., C] -> [..., C]; gate_up_proj.weight [2H, C]; down_proj.weight [C, H]
(C = dim, H = hidden_dim).
"""

from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor, nn


class SwiGLU(nn.Module):
    def __init__(self, dim: int, hidden_dim: int) -> None:
        super().__init__()
        for name, value in (("dim", dim), ("hidden_dim", hidden_dim)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        self.dim, self.hidden_dim = dim, hidden_dim
        self.gate_up_proj = nn.Linear(dim, 2 * hidden_dim, bias=False)
        self.down_proj = nn.Linear(hidden_dim, dim, bias=False)

    def forward(self, x: Tensor) -> Tensor:
        if not isinstance(x, Tensor) or x.dim() < 1 or x.shape[-1] != self.dim:
            shape = tuple(x.shape) if isinstance(x, Tensor) else type(x).__name__
            raise ValueError(f"x must be [..., {self.dim}], got {shape}")
        weight = self.gate_up_proj.weight  # x must match the module's dtype and device
        if x.dtype != weight.dtype or x.device != weight.device:
            raise ValueError(f"x is {x.dtype} on {x.device}; the module {weight.dtype} on "
                             f"{weight.device}")  # fmt: skip
        gate, up = self.gate_up_proj(x).chunk(2, dim=-1)  # [..., H] each
        out: Tensor = self.down_proj(F.silu(gate) * up)
        return out


__all__ = ["SwiGLU"]
