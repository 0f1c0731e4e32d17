"""A stranger masks its stores but loads the padded row whole: the lanes past H read the next
row or the poison after the buffer into the sum of squares."""

VARIABLE = "DRILL_T04_MODULE"
EXPECTED_OWNER = "t04"

import triton
import triton.language as tl


@triton.jit
def k(X, R, W, O, S, H, eps, x0, x1, r0, r1, w0, o0, o1, s0, s1, B: tl.constexpr):
    i = tl.program_id(0)
    c = tl.arange(0, B)
    m = c < H
    h = tl.load(X + i * x0 + c * x1).to(tl.float32) + tl.load(R + i * r0 + c * r1).to(tl.float32)
    h = h.to(S.dtype.element_ty)
    tl.store(S + i * s0 + c * s1, h, mask=m)
    h = h.to(tl.float32)
    w = tl.load(W + c * w0, mask=m, other=0.0).to(tl.float32)
    y = h / tl.sqrt(tl.sum(tl.where(m, h * h, h * h), axis=0) / H + eps) * w
    tl.store(O + i * o0 + c * o1, y.to(O.dtype.element_ty), mask=m)


def fused_add_rmsnorm(x, residual, weight, eps, out, residual_out):
    M, H = x.shape
    k[(M,)](
        x,
        residual,
        weight,
        out,
        residual_out,
        H,
        eps,
        *x.stride(),
        *residual.stride(),
        weight.stride(0),
        *out.stride(),
        *residual_out.stride(),
        B=triton.next_power_of_2(H),
    )
    return out, residual_out
