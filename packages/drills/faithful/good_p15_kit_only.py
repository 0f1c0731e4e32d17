"""A stranger's P15 from the kit's words alone: pairs (i, i + D/2) as complex numbers turned
by a unit phase, angles in fp32; the one rejection the kit names (an odd D), the rest left
to torch."""

import torch

VARIABLE = "DRILL_P15_MODULE"


def _turn(x, phase):
    half = x.shape[-1] // 2
    wide = x.float()
    pairs = torch.complex(wide[..., :half], wide[..., half:]) * phase
    return torch.cat((pairs.real, pairs.imag), dim=-1).to(x.dtype)


def apply_rotary(q, k, positions, theta=10000.0):
    dim = q.shape[-1]
    if dim % 2:
        raise ValueError(f"head dim D = {dim} must be even")
    exponents = torch.arange(0, dim, 2, device=q.device, dtype=torch.float32) / dim
    angles = positions.to(torch.float32)[..., None] / theta**exponents
    if angles.dim() == 2:
        angles = angles[None]
    phase = torch.polar(torch.ones_like(angles), angles)[:, None]
    return _turn(q, phase), _turn(k, phase)
