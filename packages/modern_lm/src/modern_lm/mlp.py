"""SwiGLU: down(silu(gate(x)) * up(x)), bias-free."""

from __future__ import annotations

from torch import Tensor, nn
from torch.nn import functional

from .checks import check_features, check_size


class SwiGLU(nn.Module):
    """The gate goes through SiLU; the up projection is the linear branch it scales."""

    def __init__(self, hidden_size: int, intermediate_size: int) -> None:
        super().__init__()
        check_size("hidden_size", hidden_size)
        check_size("intermediate_size", intermediate_size)
        self.gate_proj = nn.Linear(hidden_size, intermediate_size, bias=False)
        self.up_proj = nn.Linear(hidden_size, intermediate_size, bias=False)
        self.down_proj = nn.Linear(intermediate_size, hidden_size, bias=False)

    def forward(self, x: Tensor) -> Tensor:
        check_features("x", x, self.gate_proj.in_features)
        out: Tensor = self.down_proj(functional.silu(self.gate_proj(x)) * self.up_proj(x))
        return out


__all__ = ["SwiGLU"]
