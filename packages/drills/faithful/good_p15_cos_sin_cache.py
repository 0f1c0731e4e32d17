"""A stranger's P15 from the README alone: an fp32 cos/sin table indexed by position (HF's
rotate_half form), checks in its own order, kept in fp32 until the end."""

import torch

VARIABLE = "DRILL_P15_MODULE"


def _rotate_half(x):
    a, b = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2 :]
    return torch.cat((-b, a), dim=-1)


def apply_rotary(q, k, positions, theta=10000.0):
    if not torch.is_tensor(positions) or positions.dtype not in (torch.int32, torch.int64):
        raise TypeError("positions must be an int32/int64 tensor")
    if q.dim() != 4 or k.dim() != 4:
        raise ValueError("q and k must be [B, H, T, D]")
    batch, _, tokens, dim = q.shape
    if dim % 2 != 0:
        raise ValueError(f"head dim {dim} of q is odd")
    if k.shape[-1] != dim or k.shape[0] != batch or k.shape[2] != tokens:
        raise ValueError(f"k {tuple(k.shape)} does not fit q {tuple(q.shape)}")
    if positions.shape == (tokens,):
        positions = positions.unsqueeze(0).expand(batch, tokens)
    elif positions.shape != (batch, tokens):
        raise ValueError(f"positions has shape {tuple(positions.shape)}")
    if positions.min() < 0:
        raise ValueError("positions must not be negative")
    if not theta > 0:
        raise ValueError("theta must be positive")
    size = int(positions.max()) + 1
    inv = 1.0 / theta ** (torch.arange(0, dim, 2, dtype=torch.float64, device=q.device) / dim)
    table = torch.outer(torch.arange(size, dtype=torch.float64, device=q.device), inv).float()
    table = torch.cat((table, table), dim=-1)  # [size, D]
    cos, sin = table.cos()[positions][:, None], table.sin()[positions][:, None]  # [B,1,T,D]
    out_q = q.float() * cos + _rotate_half(q.float()) * sin
    out_k = k.float() * cos + _rotate_half(k.float()) * sin
    return out_q.to(q.dtype), out_k.to(k.dtype)
