"""T06 per-token quantization: symmetric int8 with one fp32 scale per row, and its dequant.

One row (a token) per program, padded to BLOCK = next_power_of_2(D) lanes (a head dim of
80 or 96 pads to 128); the padded lanes load 0, so they never win the max-abs. scale =
max|x| / 127 in fp32, and 1.0 for an all-zero row (a positive finite scale: dequant gives
0 back, never 0 / 0); q = x / scale rounded half to even, which lies in [-127, 127].
"""

from __future__ import annotations

# Before triton: its language functions (tl.max, tl.sum) are jitted when it is imported.
from . import _interpret  # noqa: F401

# isort: split
import torch
import triton
import triton.language as tl
from torch import Tensor

# Adding then subtracting 1.5 * 2**23 rounds an fp32 of magnitude below 2**22 half to even
# (libdevice's rint is not available under Triton's interpreter).
ROUNDER = 12582912.0

LEDGER = {
    "grid": "`quantize_per_token: (M,)` and `dequantize_per_token: (M,)`: one program per row",
    "tile": "BLOCK = next_power_of_2(D) lanes: the whole row in registers",
    "pointer formula": "ptr + row * stride_0 + cols * stride_1 for x, q, out; scales + row * "
    "stride",
    "mask": "cols < D on every row load (0 in: never the max-abs) and store; one scale a row",
    "traffic": "`quantize_per_token: M * D * (size(x) + size(q)) + M * size(scales)`; "
    "`dequantize_per_token: M * D * (size(q) + size(out)) + M * size(scales)`: the scales are "
    "4 / D of the int8 traffic",
    "occupancy limiter": "registers: BLOCK fp32 lanes per row; head dims (64-256) fit easily",
    "oracle": "scale = x.float().abs().amax(-1) / 127 (1.0 where 0), q = torch.round(x / scale)"
    ", dequant q * scale; |dequant - x| <= scale / 2",
    "benchmark method": "triton.testing.do_bench against the same ops in torch, compile "
    "excluded, GB/s from the traffic above",
}


@triton.jit
def _quantize_kernel(x_ptr, q_ptr, s_ptr, D, sx0, sx1, sq0, sq1, ss0, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    inside = cols < D
    x = tl.load(x_ptr + row * sx0 + cols * sx1, mask=inside, other=0.0).to(tl.float32)
    amax = tl.max(tl.abs(x), axis=0)
    scale = tl.where(amax > 0, amax / 127.0, 1.0)
    q = (x / scale + ROUNDER) - ROUNDER
    tl.store(q_ptr + row * sq0 + cols * sq1, q.to(tl.int8), mask=inside)
    tl.store(s_ptr + row * ss0, scale)


@triton.jit
def _dequantize_kernel(q_ptr, s_ptr, out_ptr, D, sq0, sq1, ss0, so0, so1, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    inside = cols < D
    q = tl.load(q_ptr + row * sq0 + cols * sq1, mask=inside, other=0).to(tl.float32)
    scale = tl.load(s_ptr + row * ss0)
    tl.store(out_ptr + row * so0 + cols * so1, (q * scale).to(out_ptr.dtype.element_ty),
             mask=inside)  # fmt: skip


def _check(name: str, t: object, shape: tuple[int, ...], dtype: torch.dtype | None) -> None:
    if not isinstance(t, Tensor) or tuple(t.shape) != shape or (dtype and t.dtype != dtype):
        raise ValueError(f"{name} must be a tensor of shape {shape}, dtype {dtype or 'float'}")


def quantize_per_token(x: Tensor, q: Tensor, scales: Tensor) -> tuple[Tensor, Tensor]:
    """q[r] = round(x[r] / scales[r]) in int8, scales[r] = max|x[r]| / 127 (fp32); returns both."""
    if not isinstance(x, Tensor) or x.dim() != 2 or x.shape[1] == 0 or not x.is_floating_point():
        raise ValueError("x must be a floating 2-D tensor [M, D] with D >= 1")
    M, D = x.shape
    _check("q", q, (M, D), torch.int8)
    _check("scales", scales, (M,), torch.float32)
    if M:
        _quantize_kernel[(M,)](x, q, scales, D, *x.stride(), *q.stride(), scales.stride(0),
                               BLOCK=triton.next_power_of_2(D))  # fmt: skip
    return q, scales


def dequantize_per_token(q: Tensor, scales: Tensor, out: Tensor) -> Tensor:
    """out[r] = q[r] * scales[r], computed in fp32, rounded once to out's dtype; returns out."""
    if not isinstance(q, Tensor) or q.dim() != 2 or q.shape[1] == 0 or q.dtype != torch.int8:
        raise ValueError("q must be an int8 2-D tensor [M, D] with D >= 1")
    M, D = q.shape
    _check("scales", scales, (M,), torch.float32)
    _check("out", out, (M, D), None)
    if M:
        _dequantize_kernel[(M,)](q, scales, out, D, *q.stride(), scales.stride(0), *out.stride(),
                                 BLOCK=triton.next_power_of_2(D))  # fmt: skip
    return out


__all__ = ["LEDGER", "dequantize_per_token", "quantize_per_token"]
