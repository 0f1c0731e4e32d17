"""T04 fused residual RMSNorm: h = x + residual, out = h * rsqrt(mean(h^2) + eps) * weight.

One row per program, padded to BLOCK = next_power_of_2(H) lanes; the lanes past H load 0,
so they add nothing to the sum of squares, and the mean divides by H, never by BLOCK. The
sum h (the residual stream the next layer reads) is rounded to residual_out's dtype and
stored; the statistics are taken of that rounded h, in fp32. Unfused, h is written by the
add and read back by the norm: fusing saves that write and read of one activation.
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
    "tile": "BLOCK = next_power_of_2(H) lanes: the whole row in registers",
    "pointer formula": "ptr + row * stride_0 + cols * stride_1 for x, residual, out, residual_out;"
    " weight_ptr + cols * stride",
    "mask": "cols < H on every load (0 in: nothing added to the sum of squares) and store",
    "traffic": "`M * H * (size(x) + size(residual) + size(out) + size(residual_out)) + H * "
    "size(weight)`; unfused adds M * H * 2 * size(h): the sum written, then read back",
    "occupancy limiter": "registers: BLOCK fp32 lanes per row; near 8K-16K a row spills, then "
    "loop over column chunks (two passes)",
    "oracle": "h = (x.float() + residual.float()).to(dtype); h.float() * rsqrt(mean(h.float()^2) "
    "+ eps) * weight.float(), rounded once",
    "benchmark method": "triton.testing.do_bench against torch's add then RMSNorm, compile "
    "excluded, GB/s from the traffic above",
}


@triton.jit
def _add_rmsnorm_kernel(x_ptr, r_ptr, w_ptr, out_ptr, h_ptr, H, eps, sx0, sx1, sr0, sr1, sw0,
                        so0, so1, sh0, sh1, BLOCK: tl.constexpr):  # fmt: skip
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    inside = cols < H
    x = tl.load(x_ptr + row * sx0 + cols * sx1, mask=inside, other=0.0).to(tl.float32)
    r = tl.load(r_ptr + row * sr0 + cols * sr1, mask=inside, other=0.0).to(tl.float32)
    h = (x + r).to(h_ptr.dtype.element_ty)
    tl.store(h_ptr + row * sh0 + cols * sh1, h, mask=inside)
    h = h.to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(h * h, axis=0) / H + eps)
    w = tl.load(w_ptr + cols * sw0, mask=inside, other=0.0).to(tl.float32)
    y = (h * rstd * w).to(out_ptr.dtype.element_ty)
    tl.store(out_ptr + row * so0 + cols * so1, y, mask=inside)


def _check(name: str, t: object, shape: tuple[int, ...]) -> None:
    if not isinstance(t, Tensor) or tuple(t.shape) != shape:
        raise ValueError(f"{name} must be a tensor of shape {shape}")


def fused_add_rmsnorm(x: Tensor, residual: Tensor, weight: Tensor, eps: float, out: Tensor,
                      residual_out: Tensor) -> tuple[Tensor, Tensor]:  # fmt: skip
    """residual_out = x + residual; out = RMSNorm(residual_out) * weight; returns both."""
    if not isinstance(x, Tensor) or x.dim() != 2 or x.shape[1] == 0:
        raise ValueError("x must be a 2-D tensor [M, H] with H >= 1")
    M, H = x.shape
    for name, t in (("residual", residual), ("out", out), ("residual_out", residual_out)):
        _check(name, t, (M, H))
    _check("weight", weight, (H,))
    if not eps > 0:
        raise ValueError(f"eps must be positive, got {eps}")
    if M:
        _add_rmsnorm_kernel[(M,)](
            x, residual, weight, out, residual_out, H, float(eps), *x.stride(), *residual.stride(),
            weight.stride(0), *out.stride(), *residual_out.stride(),
            BLOCK=triton.next_power_of_2(H),
        )  # fmt: skip
    return out, residual_out


__all__ = ["LEDGER", "fused_add_rmsnorm"]
