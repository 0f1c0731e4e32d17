"""A stranger's PT11 from the kit's row alone: rows flattened to [N, D] and restored, the
division in float64 (the scale rounded to float32 once), zero rows given 1.0 by a masked
write, TypeError for a wrong dtype, NaN/Inf refused by a ValueError naming the value."""

import torch

VARIABLE = "DRILL_PT11_MODULE"


def quantize_per_token(x):
    if not torch.is_floating_point(x) or x.dtype == torch.float64:
        raise TypeError(f"x must be fp16, bf16 or fp32, got {x.dtype}")
    bad = ~torch.isfinite(x)
    if bad.any():
        raise ValueError(f"x holds {x[bad][0].item()}, which has no finite scale")
    rows = x.reshape(-1, x.shape[-1]).double()
    amax = rows.abs().max(dim=1, keepdim=True).values if rows.shape[0] else rows[:, :1]
    scale = (amax.float() / 127).clamp_min(torch.finfo(torch.float32).tiny)
    scale[amax == 0] = 1.0
    q = torch.clamp(torch.round(rows / scale.double()), -127, 127).to(torch.int8)
    return q.reshape(x.shape), scale.reshape(*x.shape[:-1], 1)


def dequantize_per_token(q, scales):
    return q.to(torch.float32) * scales
