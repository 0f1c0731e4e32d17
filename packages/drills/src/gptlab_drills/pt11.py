"""PT11 dynamic per-token quantization (transfer case; owner P23).

Each row (token) of x gets its own symmetric int8 scale, computed at run time in float32:

    scale[n] = max_d |x[n, d]| / 127        (1.0 for an all-zero row: always positive;
                                             never below float32's smallest normal)
    q[n, d]  = clamp(round(x[n, d] / scale[n]), -127, 127)      int8
    dequantize_per_token(q, scale)[n, d] = q[n, d] * scale[n]   float32

so the largest magnitude of a row maps to +-127 and every element comes back within half a
scale. The zero point is 0 and -128 is never used (the range is symmetric). NaN or an
infinity anywhere is refused: it has no finite scale. Leading dims are kept.

Shapes: x [*N, D] (fp16, bf16 or fp32, D >= 1) -> q [*N, D] int8, scales [*N, 1] float32;
dequantize_per_token(q, scales) -> [*N, D] float32.
"""

from __future__ import annotations

import torch
from torch import Tensor

from ._describe import described

QMAX = 127
FLOATS = (torch.float16, torch.bfloat16, torch.float32)


def quantize_per_token(x: Tensor) -> tuple[Tensor, Tensor]:
    """(q [*N, D] int8, scales [*N, 1] float32), one symmetric scale per row."""
    _check(x)
    wide = x.float()  # the scale math is float32 whatever x's dtype
    amax = wide.abs().amax(dim=-1, keepdim=True)
    # a subnormal row's amax / 127 may round to 0: the smallest normal float32 stays positive
    tight = (amax / QMAX).clamp_min(torch.finfo(torch.float32).tiny)
    scales = torch.where(amax > 0, tight, torch.ones_like(amax))
    q = (wide / scales).round().clamp(-QMAX, QMAX).to(torch.int8)
    return q, scales


def dequantize_per_token(q: Tensor, scales: Tensor) -> Tensor:
    """q * scales in float32: [*N, D]."""
    return q.float() * scales


def _check(x: Tensor) -> None:
    if not isinstance(x, Tensor) or x.dtype not in FLOATS:
        raise ValueError(f"x must be an fp16/bf16/fp32 tensor, got {described(x)}")
    if x.dim() < 1 or x.shape[-1] == 0:
        raise ValueError(f"x must be [*N, D] with D >= 1, got {tuple(x.shape)}")
    if not bool(torch.isfinite(x).all()):
        raise ValueError("x holds NaN or an infinity: no finite scale quantizes it")


__all__ = ["dequantize_per_token", "quantize_per_token"]
