"""A stranger loads the padded row without a mask: the lanes past N read the next row or the
poison after the buffer into the max and the sum."""

VARIABLE = "DRILL_T03_MODULE"
EXPECTED_OWNER = "t03"

import triton
import triton.language as tl


@triton.jit
def k(X, O, N, a0, a1, o0, o1, BLOCK: tl.constexpr):
    r = tl.program_id(0)
    c = tl.arange(0, BLOCK)
    v = tl.load(X + r * a0 + c * a1).to(tl.float32)
    v = tl.where(c < N, v, v)
    e = tl.exp(v - tl.max(v, axis=0))
    tl.store(O + r * o0 + c * o1, (e / tl.sum(e, axis=0)).to(O.dtype.element_ty), mask=c < N)


def softmax(x, out):
    M, N = x.shape
    k[(M,)](
        x,
        out,
        N,
        x.stride(0),
        x.stride(1),
        out.stride(0),
        out.stride(1),
        BLOCK=triton.next_power_of_2(N),
    )
    return out
