"""T01 masked vector op: out = a * x + y, one block of elements per program.

Program p owns elements [p * BLOCK, (p + 1) * BLOCK); the last block runs past n, so
every load and store is masked with `offsets < n`. Each buffer is read through its own
stride (a strided 1-D view is never copied), the arithmetic is fp32 whatever the inputs'
dtype, and the result is rounded once, to out's dtype, at the store.
"""

from __future__ import annotations

# Before triton: its language functions (tl.max, tl.sum) are jitted when it is imported.
from . import _interpret  # noqa: F401

# isort: split
import triton
import triton.language as tl
from torch import Tensor

BLOCK = 256

LEDGER = {
    "grid": "`(cdiv(n, BLOCK),)`: one program per block of BLOCK elements",
    "tile": "BLOCK = 256 elements of one 1-D buffer",
    "pointer formula": "ptr + offsets * stride, offsets = pid * BLOCK + arange(BLOCK)",
    "mask": "offsets < n on every load and store (the last block's tail)",
    "traffic": "`n * (size(x) + size(y) + size(out))` bytes: two reads, one write",
    "occupancy limiter": "none at this tile: bandwidth-bound when large, launch-bound when small",
    "oracle": "a * x.float() + y.float(), rounded once to out's dtype",
    "benchmark method": "triton.testing.do_bench against torch (a * x + y), compile excluded, "
    "achieved GB/s = traffic / time against the device's peak",
}


@triton.jit
def _axpy_kernel(a, x_ptr, y_ptr, out_ptr, n, x_stride, y_stride, out_stride,
                 BLOCK: tl.constexpr):  # fmt: skip
    pid = tl.program_id(0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    inside = offsets < n
    x = tl.load(x_ptr + offsets * x_stride, mask=inside, other=0.0).to(tl.float32)
    y = tl.load(y_ptr + offsets * y_stride, mask=inside, other=0.0).to(tl.float32)
    z = a * x + y
    tl.store(out_ptr + offsets * out_stride, z.to(out_ptr.dtype.element_ty), mask=inside)


def _check(name: str, t: object, n: int | None) -> None:
    if not isinstance(t, Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if t.dim() != 1 or (n is not None and t.shape[0] != n):
        raise ValueError(f"{name} must be 1-D of length {n}, got shape {tuple(t.shape)}")
    if not t.is_floating_point():
        raise TypeError(f"{name} must be a floating tensor, got {t.dtype}")


def axpy(a: float, x: Tensor, y: Tensor, out: Tensor) -> Tensor:
    """Write a * x + y into out (1-D, one length, any strides) and return out."""
    _check("x", x, None)
    n = x.shape[0]
    _check("y", y, n)
    _check("out", out, n)
    if len({x.device, y.device, out.device}) != 1:
        raise ValueError("x, y and out must be on one device")
    if n == 0:
        return out  # nothing to launch
    grid = (triton.cdiv(n, BLOCK),)
    _axpy_kernel[grid](float(a), x, y, out, n, x.stride(0), y.stride(0), out.stride(0),
                       BLOCK=BLOCK)  # fmt: skip
    return out


__all__ = ["LEDGER", "axpy"]
