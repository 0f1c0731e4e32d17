"""A stranger's T03: each row in 64-lane chunks, an online max and sum, then a second pass
that normalises (another tiling: the row never sits in registers whole)."""

VARIABLE = "DRILL_T03_MODULE"

import triton
import triton.language as tl


@triton.jit
def k(X, O, N, a0, a1, o0, o1, C: tl.constexpr):
    r = tl.program_id(0)
    m = -float("inf")
    s = 0.0
    for start in range(0, N, C):
        c = start + tl.arange(0, C)
        v = tl.load(X + r * a0 + c * a1, mask=c < N, other=-float("inf")).to(tl.float32)
        new = tl.maximum(m, tl.max(v, axis=0))
        s = s * tl.exp(m - new) + tl.sum(tl.exp(v - new), axis=0)
        m = new
    for start in range(0, N, C):
        c = start + tl.arange(0, C)
        v = tl.load(X + r * a0 + c * a1, mask=c < N, other=-float("inf")).to(tl.float32)
        tl.store(O + r * o0 + c * o1, (tl.exp(v - m) / s).to(O.dtype.element_ty), mask=c < N)


def softmax(x, out):
    if x.dim() != 2 or x.shape[1] == 0 or out.shape != x.shape:
        raise ValueError("x must be [M, N] with N >= 1, out x's shape")
    M, N = x.shape
    if M:
        k[(M,)](x, out, N, x.stride(0), x.stride(1), out.stride(0), out.stride(1), C=64)
    return out
