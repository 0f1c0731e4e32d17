"""A stranger indexes every buffer as if contiguous: a strided view is read and written at the
wrong elements (strided views are this project's rule, T01.5: graded on extension tests too)."""

VARIABLE = "DRILL_T01_MODULE"
EXPECTED_OWNER = "t01"
SCOPE = "all"

import triton
import triton.language as tl


@triton.jit
def k(a, X, Y, Z, n, B: tl.constexpr):
    o = tl.program_id(0) * B + tl.arange(0, B)
    m = o < n
    x = tl.load(X + o, mask=m).to(tl.float32)
    y = tl.load(Y + o, mask=m).to(tl.float32)
    tl.store(Z + o, (a * x + y).to(Z.dtype.element_ty), mask=m)


def axpy(a, x, y, out):
    n = x.shape[0]
    if x.dim() != 1 or y.shape != x.shape or out.shape != x.shape:
        raise ValueError("x, y and out must be 1-D of one length")
    if n:
        k[(triton.cdiv(n, 512),)](float(a), x, y, out, n, B=512)
    return out
