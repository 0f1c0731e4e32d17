"""P15 rotary position embedding for Q and K, at explicit positions.

Convention (rotate-half, as GPT-NeoX, Llama in Hugging Face): channel i pairs with channel
i + D/2, and the pair at position p turns by the angle p * theta^(-2i/D):

    x'[i]       = x[i] cos(a) - x[i + D/2] sin(a)
    x'[i + D/2] = x[i + D/2] cos(a) + x[i] sin(a)

Position 0 is the identity; each pair keeps its norm; q.k then depends on positions only
through their difference. V is never rotated. Angles are computed in fp32 (an fp16 angle at
position 2000 is off by whole radians) and the outputs come back in the inputs' dtypes.

Shapes: q [B, Hq, T, D], k [B, Hkv, T, D] (Hq and Hkv may differ), D even;
positions [B, T] (per row) or [T] (shared by every row), integers >= 0.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor


def apply_rotary(
    q: Tensor, k: Tensor, positions: Tensor, theta: float = 10000.0
) -> tuple[Tensor, Tensor]:
    """Rotate q and k by their tokens' positions -> (q_rotated, k_rotated), new tensors."""
    _check(q, k, positions, theta)
    B, _, T, D = q.shape
    half = D // 2
    inverse_frequency = theta ** (
        -torch.arange(half, dtype=torch.float32, device=q.device) * 2 / D
    )  # [D/2]
    pos = positions.to(torch.float32).expand(B, T)  # [T] shares one row of positions
    angles = pos[:, None, :, None] * inverse_frequency  # [B, 1, T, D/2]: one per head alike
    cos, sin = angles.cos(), angles.sin()
    return _rotate(q, cos, sin), _rotate(k, cos, sin)


def _rotate(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    first, second = x.float().chunk(2, dim=-1)
    turned = torch.cat((first * cos - second * sin, second * cos + first * sin), dim=-1)
    return turned.to(x.dtype)


def _check(q: Tensor, k: Tensor, positions: Tensor, theta: float) -> None:
    for name, tensor in (("q", q), ("k", k)):
        if not isinstance(tensor, Tensor) or tensor.dim() != 4 or not tensor.is_floating_point():
            raise ValueError(f"{name} must be a floating 4-D tensor [B, H, T, D]")
    B, _, T, D = q.shape
    if D % 2:
        raise ValueError(f"q's head dim D = {D} must be even: rotary turns channel pairs")
    if (k.shape[0], k.shape[2], k.shape[3]) != (B, T, D):
        raise ValueError(f"k {tuple(k.shape)} must share B, T and D with q {tuple(q.shape)}")
    if not isinstance(positions, Tensor) or positions.is_floating_point() or positions.is_complex():
        raise ValueError("positions must be an integer tensor")
    if positions.dtype == torch.bool:  # True/False are not positions
        raise ValueError("positions must be an integer tensor, got bool")
    if positions.shape not in ((B, T), (T,)):
        raise ValueError(f"positions must be [{B}, {T}] or [{T}], got {tuple(positions.shape)}")
    if positions.device != q.device or k.device != q.device or q.is_meta:
        raise ValueError("q, k and positions must share a device (not meta)")
    if bool((positions < 0).any()):
        raise ValueError("positions must be >= 0")
    if isinstance(theta, bool) or not isinstance(theta, int | float) or not 0 < theta < math.inf:
        raise ValueError(f"theta must be a finite positive number, got {theta!r}")


__all__ = ["apply_rotary"]
