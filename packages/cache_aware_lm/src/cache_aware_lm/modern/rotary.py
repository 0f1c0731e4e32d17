"""Rotary position embeddings driven by absolute positions.

Channel pair (i, i + D/2) of a query or key at absolute position p is rotated by
the angle ``p * theta^(-2i/D)``. A query at p and a key at p' then score through
``p - p'`` only, so attention depends on relative offsets, while each token's
rotation still comes from its own absolute ``positions`` entry (cached keys were
rotated when they were written).
"""

from __future__ import annotations

import torch
from torch import Tensor, nn


class RotaryEmbedding(nn.Module):
    def __init__(self, head_dim: int, theta: float) -> None:
        super().__init__()
        exponents = torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim
        self.inv_freq: Tensor
        self.register_buffer("inv_freq", theta**-exponents, persistent=False)

    def forward(self, positions: Tensor, dtype: torch.dtype) -> tuple[Tensor, Tensor]:
        """positions [B, T] -> (cos, sin), each [B, 1, T, D] (broadcast over heads)."""
        angles = positions.to(torch.float32)[..., None] * self.inv_freq  # [B, T, D/2]
        angles = torch.cat((angles, angles), dim=-1)[:, None]  # [B, 1, T, D]
        return angles.cos().to(dtype), angles.sin().to(dtype)


def rotate_half(x: Tensor) -> Tensor:
    first, second = x.chunk(2, dim=-1)
    return torch.cat((-second, first), dim=-1)


def apply_rotary(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    """Rotate [B, H, T, D] queries or keys by their positions' angles."""
    return x * cos + rotate_half(x) * sin
