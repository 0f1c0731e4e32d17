"""Rotary position embeddings at supplied absolute positions (Llama's split-half layout).

Channel pair (i, i + D/2) of a query or key at position p is rotated by the angle
``p * theta^(-2i/D)`` (``rotate_half`` on ``cat(angles, angles)``). A query at p and a
key at p' then score through ``p - p'`` only. Values are never rotated.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from .checks import ArgumentTypeError, check_float, check_size


class RotaryEmbedding(nn.Module):
    """``inv_freq`` is a non-persistent buffer: it follows ``.to()`` and is not a checkpoint key."""

    def __init__(self, head_dim: int, theta: float) -> None:
        super().__init__()
        if check_size("head_dim", head_dim) % 2 != 0:
            raise ValueError(f"head_dim must be even (rotary pairs), got {head_dim}")
        theta = check_float("rope_theta", theta)
        exponents = torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim
        self.inv_freq: Tensor
        self.register_buffer("inv_freq", theta**-exponents, persistent=False)

    def forward(self, positions: Tensor, dtype: torch.dtype) -> tuple[Tensor, Tensor]:
        """positions [B, T] -> (cos, sin), each [B, 1, T, D] (broadcast over heads)."""
        if not isinstance(positions, Tensor):
            raise ArgumentTypeError(f"positions must be a Tensor, got {type(positions).__name__}")
        if positions.dim() != 2 or positions.is_complex() or positions.dtype == torch.bool:
            raise ValueError(
                f"positions must be a real [B, T] tensor, got {positions.dtype} "
                f"{tuple(positions.shape)}"
            )
        if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
            raise ArgumentTypeError(f"dtype must be a floating torch.dtype, got {dtype!r}")
        # Angles in (at least) fp32: a half-precision angle at position 1000 is off by ~1 rad.
        angle_dtype = torch.promote_types(self.inv_freq.dtype, torch.float32)
        angles = positions.to(angle_dtype)[..., None] * self.inv_freq.to(angle_dtype)
        angles = torch.cat((angles, angles), dim=-1)[:, None]  # [B, 1, T, D]
        return angles.cos().to(dtype), angles.sin().to(dtype)


def rotate_half(x: Tensor) -> Tensor:
    """(x1, x2) -> (-x2, x1) over the two halves of the last dimension."""
    if not isinstance(x, Tensor):
        raise ArgumentTypeError(f"x must be a Tensor, got {type(x).__name__}")
    if x.dim() == 0 or x.shape[-1] % 2 != 0:
        raise ValueError(f"x must have an even last dimension, got {tuple(x.shape)}")
    first, second = x.chunk(2, dim=-1)
    return torch.cat((-second, first), dim=-1)


def apply_rotary(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    """Rotate [B, H, T, D] queries or keys by their positions' angles (cos, sin [B, 1, T, D])."""
    for name, value in (("x", x), ("cos", cos), ("sin", sin)):
        if not isinstance(value, Tensor):
            raise ArgumentTypeError(f"{name} must be a Tensor, got {type(value).__name__}")
    if x.dim() != 4 or x.shape[-1] % 2 != 0:
        raise ValueError(f"x must be [B, H, T, D] with D even, got {tuple(x.shape)}")
    B, _, T, D = x.shape
    for name, value in (("cos", cos), ("sin", sin)):
        if tuple(value.shape) != (B, 1, T, D):
            raise ValueError(f"{name} must be [{B}, 1, {T}, {D}], got {tuple(value.shape)}")
    return x * cos + rotate_half(x) * sin


__all__ = ["RotaryEmbedding", "apply_rotary", "rotate_half"]
