"""T03 fused stable softmax: one row per program, the row padded to a power of two.

Program r loads row r's N elements into BLOCK = next_power_of_2(N) lanes; the lanes past
N load -inf, so they never win the max and exp(-inf - max) = 0 adds nothing to the sum.
The row max is subtracted before exp (no overflow), and the reduction is fp32.
"""

from __future__ import annotations

# Before triton: its language functions (tl.max, tl.sum) are jitted when it is imported.
from . import _interpret  # noqa: F401

# isort: split
import triton
import triton.language as tl
from torch import Tensor

LEDGER = {
    "grid": "`(M,)`: one program per row",
    "tile": "BLOCK = next_power_of_2(N) lanes: the whole row in registers",
    "pointer formula": "x_ptr + row * stride_row + cols * stride_col (out the same, its own)",
    "mask": "cols < N: -inf in for the max, so 0 in the sum; the store masked the same",
    "traffic": "`M * N * (size(x) + size(out))`: one read, one write (unfused: about 3x)",
    "occupancy limiter": "registers: BLOCK lanes per row; past ~16K a row needs a loop or split",
    "oracle": "torch.softmax(x.float(), -1); each row sums to 1",
    "benchmark method": "triton.testing.do_bench against torch.softmax, compile excluded, GB/s",
}


@triton.jit
def _softmax_kernel(x_ptr, out_ptr, N, sx0, sx1, so0, so1, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    inside = cols < N
    x = tl.load(x_ptr + row * sx0 + cols * sx1, mask=inside, other=-float("inf"))
    x = x.to(tl.float32)
    shifted = x - tl.max(x, axis=0)
    e = tl.exp(shifted)
    y = e / tl.sum(e, axis=0)
    tl.store(out_ptr + row * so0 + cols * so1, y.to(out_ptr.dtype.element_ty), mask=inside)


def softmax(x: Tensor, out: Tensor) -> Tensor:
    """Softmax over each row of a 2-D x, written into out (same shape); returns out."""
    if not isinstance(x, Tensor) or x.dim() != 2 or x.shape[1] == 0:
        raise ValueError(f"x must be 2-D with rows of at least one element, got {x.shape}")
    if not isinstance(out, Tensor) or out.shape != x.shape:
        raise ValueError(f"out must have x's shape {tuple(x.shape)}")
    M, N = x.shape
    if M:
        block = triton.next_power_of_2(N)
        _softmax_kernel[(M,)](x, out, N, x.stride(0), x.stride(1), out.stride(0), out.stride(1),
                              BLOCK=block)  # fmt: skip
    return out


__all__ = ["LEDGER", "softmax"]
