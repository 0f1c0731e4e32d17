"""A stranger masks only the row tail: the last column tile writes past each row of out."""

VARIABLE = "DRILL_T02_MODULE"
EXPECTED_OWNER = "t02"

import triton
import triton.language as tl


@triton.jit
def k(X, B, O, M, N, a0, a1, sb, o0, o1, HB: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    r = tl.program_id(0) * BM + tl.arange(0, BM)
    c = tl.program_id(1) * BN + tl.arange(0, BN)
    m = (r < M)[:, None] & (c < N)[None, :]
    v = tl.load(X + r[:, None] * a0 + c[None, :] * a1, mask=m, other=0.0)
    if HB:
        v = (
            v.to(tl.float32) + tl.load(B + c * sb, mask=c < N, other=0.0).to(tl.float32)[None, :]
        ).to(O.dtype.element_ty)
    tl.store(O + r[:, None] * o0 + c[None, :] * o1, v, mask=(r < M)[:, None])


def _go(x, b, out, o0, o1):
    M, N = x.shape
    if M and N:
        k[(triton.cdiv(M, 8), triton.cdiv(N, 16))](
            x,
            x if b is None else b,
            out,
            M,
            N,
            x.stride(0),
            x.stride(1),
            0 if b is None else b.stride(0),
            o0,
            o1,
            HB=b is not None,
            BM=8,
            BN=16,
        )
    return out


def add_row_bias(x, bias, out):
    return _go(x, bias, out, out.stride(0), out.stride(1))


def transpose(x, out):
    return _go(x, None, out, out.stride(1), out.stride(0))
