"""T02 strided 2D copy: row bias add and transpose, one [BM, BN] tile per program.

Program (pm, pn) owns rows pm * BM + arange(BM) and columns pn * BN + arange(BN); element
(i, j) of a tensor lives at ptr + i * stride_0 + j * stride_1, so a transposed or padded
view is read and written where it lies, never copied. Both tails are masked.
"""

from __future__ import annotations

# Before triton: its language functions (tl.max, tl.sum) are jitted when it is imported.
from . import _interpret  # noqa: F401

# isort: split
import triton
import triton.language as tl
from torch import Tensor

BM, BN = 16, 32

LEDGER = {
    "grid": "`(cdiv(M, BM), cdiv(N, BN))`: one [BM, BN] tile of x per program, both functions",
    "tile": "BM = 16 rows x BN = 32 columns",
    "pointer formula": "ptr + rows[:, None] * stride_0 + cols[None, :] * stride_1 (own strides)",
    "mask": "(rows < M)[:, None] & (cols < N)[None, :] on loads and stores; cols < N for the bias",
    "traffic": "`add_row_bias: M * N * (size(x) + size(out)) + N * size(bias)`; "
    "`transpose: M * N * (size(x) + size(out))`",
    "occupancy limiter": "none at this tile; coalescing: the stride-1 dim should be the fast one",
    "oracle": "x + bias[None, :] and x.t(), in torch",
    "benchmark method": "triton.testing.do_bench against torch's copy_/add on the same views, GB/s",
}


@triton.jit
def _tile_kernel(x_ptr, b_ptr, out_ptr, M, N, sx0, sx1, sb, so0, so1,
                 HAS_BIAS: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):  # fmt: skip
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    cols = tl.program_id(1) * BN + tl.arange(0, BN)
    inside = (rows < M)[:, None] & (cols < N)[None, :]
    x = tl.load(x_ptr + rows[:, None] * sx0 + cols[None, :] * sx1, mask=inside)
    if HAS_BIAS:
        bias = tl.load(b_ptr + cols * sb, mask=cols < N, other=0.0)
        x = (x.to(tl.float32) + bias.to(tl.float32)[None, :]).to(out_ptr.dtype.element_ty)
    tl.store(out_ptr + rows[:, None] * so0 + cols[None, :] * so1, x, mask=inside)


def _check(name: str, t: object, shape: tuple[int, ...]) -> None:
    if not isinstance(t, Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if tuple(t.shape) != shape:
        raise ValueError(f"{name} must have shape {shape}, got {tuple(t.shape)}")


def _launch(x: Tensor, bias: Tensor | None, out: Tensor, so0: int, so1: int) -> Tensor:
    M, N = x.shape
    if M and N:
        b = x if bias is None else bias
        grid = (triton.cdiv(M, BM), triton.cdiv(N, BN))
        _tile_kernel[grid](x, b, out, M, N, x.stride(0), x.stride(1), b.stride(0), so0, so1,
                           HAS_BIAS=bias is not None, BM=BM, BN=BN)  # fmt: skip
    return out


def add_row_bias(x: Tensor, bias: Tensor, out: Tensor) -> Tensor:
    """out[i, j] = x[i, j] + bias[j], every tensor through its own strides; returns out."""
    if not isinstance(x, Tensor) or x.dim() != 2:
        raise ValueError("x must be a 2-D tensor")
    _check("bias", bias, (x.shape[1],))
    _check("out", out, tuple(x.shape))
    return _launch(x, bias, out, out.stride(0), out.stride(1))


def transpose(x: Tensor, out: Tensor) -> Tensor:
    """out[j, i] = x[i, j]: x's tile (i, j) is stored at out's (j, i); returns out."""
    if not isinstance(x, Tensor) or x.dim() != 2:
        raise ValueError("x must be a 2-D tensor")
    _check("out", out, (x.shape[1], x.shape[0]))
    return _launch(x, None, out, out.stride(1), out.stride(0))


__all__ = ["LEDGER", "add_row_bias", "transpose"]
