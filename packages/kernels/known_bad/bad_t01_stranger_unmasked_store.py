"""A stranger masks the loads but not the store: the last block writes zeros past out's end."""

VARIABLE = "DRILL_T01_MODULE"
EXPECTED_OWNER = "t01"

import triton
import triton.language as tl


@triton.jit
def k(a, X, Y, Z, n, sx, sy, sz, B: tl.constexpr):
    o = tl.program_id(0) * B + tl.arange(0, B)
    m = o < n
    x = tl.load(X + o * sx, mask=m, other=0.0).to(tl.float32)
    y = tl.load(Y + o * sy, mask=m, other=0.0).to(tl.float32)
    tl.store(Z + o * sz, (a * x + y).to(Z.dtype.element_ty))


def axpy(a, x, y, out):
    n = x.shape[0]
    if n:
        k[(triton.cdiv(n, 128),)](
            float(a), x, y, out, n, x.stride(0), y.stride(0), out.stride(0), B=128
        )
    return out
