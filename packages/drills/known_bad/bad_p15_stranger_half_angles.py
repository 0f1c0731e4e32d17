"""A stranger builds the angle table in the inputs' dtype: fp16/bf16 angles at large
positions are off by whole radians."""

import torch

VARIABLE = "DRILL_P15_MODULE"
EXPECTED_OWNER = "p15"


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary(q, k, positions, theta=10000.0):
    B, _, T, D = q.shape
    if D % 2:
        raise ValueError(f"head dim D={D} must be even")
    if k.shape[-1] != D or k.shape[0] != B or k.shape[2] != T:
        raise ValueError("k does not match q")
    if positions.is_floating_point() or positions.shape not in ((B, T), (T,)):
        raise ValueError("positions must be integer [B, T] or [T]")
    if (positions < 0).any():
        raise ValueError("positions must be >= 0")
    dtype = q.dtype
    inv_freq = 1.0 / (theta ** (torch.arange(0, D, 2, device=q.device, dtype=dtype) / D))
    freqs = positions.to(dtype).expand(B, T)[..., None] * inv_freq  # [B, T, D/2]
    emb = torch.cat((freqs, freqs), dim=-1)[:, None]
    cos, sin = emb.cos(), emb.sin()
    return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
