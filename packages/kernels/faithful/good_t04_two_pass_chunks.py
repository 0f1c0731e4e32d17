"""A stranger's T04: each row in 64-lane chunks; the first pass stores h and sums its squares,
the second reads h back from residual_out and normalises (another tiling: the row never sits
in registers whole, so any hidden size fits)."""

VARIABLE = "DRILL_T04_MODULE"

import triton
import triton.language as tl


@triton.jit
def k(X, R, W, O, S, H, eps, x0, x1, r0, r1, w0, o0, o1, s0, s1, C: tl.constexpr):
    i = tl.program_id(0)
    acc = tl.zeros((C,), dtype=tl.float32)
    for start in range(0, H, C):
        c = start + tl.arange(0, C)
        m = c < H
        x = tl.load(X + i * x0 + c * x1, mask=m, other=0.0).to(tl.float32)
        r = tl.load(R + i * r0 + c * r1, mask=m, other=0.0).to(tl.float32)
        h = (x + r).to(S.dtype.element_ty)
        tl.store(S + i * s0 + c * s1, h, mask=m)
        acc += h.to(tl.float32) * h.to(tl.float32)
    scale = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / H + eps)
    for start in range(0, H, C):
        c = start + tl.arange(0, C)
        m = c < H
        h = tl.load(S + i * s0 + c * s1, mask=m, other=0.0).to(tl.float32)
        w = tl.load(W + c * w0, mask=m, other=0.0).to(tl.float32)
        tl.store(O + i * o0 + c * o1, (h * scale * w).to(O.dtype.element_ty), mask=m)


def fused_add_rmsnorm(x, residual, weight, eps, out, residual_out):
    if x.dim() != 2 or x.shape[1] == 0:
        raise ValueError("x must be [M, H] with H >= 1")
    M, H = x.shape
    for name, t, shape in (
        ("residual", residual, (M, H)),
        ("weight", weight, (H,)),
        ("out", out, (M, H)),
        ("residual_out", residual_out, (M, H)),
    ):
        if tuple(t.shape) != shape:
            raise ValueError(f"{name} must be {shape}")
    if not eps > 0:
        raise ValueError("eps must be positive")
    if M:
        k[(M,)](
            x,
            residual,
            weight,
            out,
            residual_out,
            H,
            float(eps),
            *x.stride(),
            *residual.stride(),
            weight.stride(0),
            *out.stride(),
            *residual_out.stride(),
            C=64,
        )
    return out, residual_out
