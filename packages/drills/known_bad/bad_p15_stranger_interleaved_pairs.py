"""A stranger rotates adjacent channels (2i, 2i+1), the complex-number convention, where the
stated contract pairs channel i with i + D/2."""

import torch

VARIABLE = "DRILL_P15_MODULE"
EXPECTED_OWNER = "p15"


def apply_rotary(q, k, positions, theta=10000.0):
    B, _, T, D = q.shape
    if D % 2 or k.shape[-1] != D or k.shape[0] != B or k.shape[2] != T:
        raise ValueError("q and k must share an even head dim D")
    if positions.is_floating_point() or positions.shape not in ((B, T), (T,)):
        raise ValueError("positions must be integer [B, T] or [T]")
    if (positions < 0).any():
        raise ValueError("positions must be >= 0")
    freqs = 1.0 / theta ** (torch.arange(0, D, 2, device=q.device).float() / D)
    angles = positions.float().expand(B, T)[:, None, :, None] * freqs
    rot = torch.polar(torch.ones_like(angles), angles)

    def turn(x):
        pairs = torch.view_as_complex(x.float().reshape(*x.shape[:-1], D // 2, 2).contiguous())
        return torch.view_as_real(pairs * rot).flatten(-2).to(x.dtype)

    return turn(q), turn(k)
