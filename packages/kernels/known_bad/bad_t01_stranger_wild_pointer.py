"""A stranger's kernel offsets its pointers by a wild amount: the worker reads unmapped memory
and dies (a crash fails the test it ran; the worker is restarted, the run goes on)."""

VARIABLE = "DRILL_T01_MODULE"
EXPECTED_OWNER = "t01"
RUN = "isolated"

import triton
import triton.language as tl


@triton.jit
def k(a, X, Y, Z, n, sx, sy, sz, B: tl.constexpr):
    o = tl.program_id(0) * B + tl.arange(0, B)
    m = o < n
    x = tl.load(X + o * sx + (1 << 40), mask=m).to(tl.float32)
    y = tl.load(Y + o * sy, mask=m).to(tl.float32)
    tl.store(Z + o * sz, (a * x + y).to(Z.dtype.element_ty), mask=m)


def axpy(a, x, y, out):
    n = x.shape[0]
    if n:
        k[(triton.cdiv(n, 128),)](
            float(a), x, y, out, n, x.stride(0), y.stride(0), out.stride(0), B=128
        )
    return out
