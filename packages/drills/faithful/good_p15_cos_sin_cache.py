"""A stranger's P15 from the README alone: an fp32 cos/sin table indexed by position (HF's
rotate_half form), checks in its own order, kept in fp32 until the end."""

import torch

VARIABLE = "DRILL_P15_MODULE"


def _rotate_half(x):
    a, b = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2 :]
    return torch.cat((-b, a), dim=-1)


def _integer(t):
    return torch.is_tensor(t) and not (
        t.is_floating_point() or t.is_complex() or t.dtype == torch.bool
    )


def apply_rotary(q, k, positions, theta=10000.0):
    if not _integer(positions):
        raise TypeError("positions must be a tensor of integer positions")
    for name, x in (("q", q), ("k", k)):
        if not torch.is_tensor(x) or not x.is_floating_point():
            raise TypeError(f"{name} must be a floating tensor")
    if q.dim() != 4 or k.dim() != 4:
        raise ValueError("q and k must be [B, H, T, D]")
    if q.is_meta or k.device != q.device or positions.device != q.device:
        raise ValueError("q, k and positions must share one real device")
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
    if isinstance(theta, bool) or not isinstance(theta, (int, float)):
        raise TypeError("theta must be a number")
    if not 0 < theta < float("inf"):
        raise ValueError("theta must be finite and positive")
    size = int(positions.max()) + 1
    inv = 1.0 / theta ** (torch.arange(0, dim, 2, dtype=torch.float64, device=q.device) / dim)
    table = torch.outer(torch.arange(size, dtype=torch.float64, device=q.device), inv).float()
    positions = positions.long()
    table = torch.cat((table, table), dim=-1)  # [size, D]
    cos, sin = table.cos()[positions][:, None], table.sin()[positions][:, None]  # [B,1,T,D]
    out_q = q.float() * cos + _rotate_half(q.float()) * sin
    out_k = k.float() * cos + _rotate_half(k.float()) * sin
    return out_q.to(q.dtype), out_k.to(k.dtype)
