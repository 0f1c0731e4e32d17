"""A stranger loads the padded row whole for its max-abs: the lanes past D read the next row
(or the guard after the buffer) into the scale; its stores are masked."""

VARIABLE = "DRILL_T06_MODULE"
EXPECTED_OWNER = "t06"

import triton
import triton.language as tl


@triton.jit
def kq(X, Q, S, D, x0, x1, q0, q1, s0, B: tl.constexpr):
    r = tl.program_id(0)
    c = tl.arange(0, B)
    x = tl.load(X + r * x0 + c * x1).to(tl.float32)
    a = tl.max(tl.abs(x), axis=0)
    s = tl.where(a > 0, a / 127.0, 1.0)
    v = (x / s + 12582912.0) - 12582912.0
    tl.store(Q + r * q0 + c * q1, v.to(tl.int8), mask=c < D)
    tl.store(S + r * s0, s)


@triton.jit
def kd(Q, S, O, D, q0, q1, s0, o0, o1, B: tl.constexpr):
    r = tl.program_id(0)
    c = tl.arange(0, B)
    v = tl.load(Q + r * q0 + c * q1, mask=c < D, other=0).to(tl.float32) * tl.load(S + r * s0)
    tl.store(O + r * o0 + c * o1, v.to(O.dtype.element_ty), mask=c < D)


def quantize_per_token(x, q, scales):
    M, D = x.shape
    kq[(M,)](
        x, q, scales, D, *x.stride(), *q.stride(), scales.stride(0), B=triton.next_power_of_2(D)
    )
    return q, scales


def dequantize_per_token(q, scales, out):
    M, D = q.shape
    kd[(M,)](
        q, scales, out, D, *q.stride(), scales.stride(0), *out.stride(), B=triton.next_power_of_2(D)
    )
    return out
