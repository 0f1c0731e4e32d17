"""A stranger's T02: one whole row per program (BLOCK = next power of two of N), another tiling."""

VARIABLE = "DRILL_T02_MODULE"

import triton
import triton.language as tl


@triton.jit
def k(X, B, O, N, a0, a1, sb, o0, o1, HB: tl.constexpr, BLOCK: tl.constexpr):
    r = tl.program_id(0)
    c = tl.arange(0, BLOCK)
    m = c < N
    v = tl.load(X + r * a0 + c * a1, mask=m)
    if HB:
        v = (v.to(tl.float32) + tl.load(B + c * sb, mask=m).to(tl.float32)).to(O.dtype.element_ty)
    tl.store(O + r * o0 + c * o1, v, mask=m)


def _go(x, b, out, o0, o1):
    M, N = x.shape
    if M and N:
        k[(M,)](
            x,
            x if b is None else b,
            out,
            N,
            x.stride(0),
            x.stride(1),
            0 if b is None else b.stride(0),
            o0,
            o1,
            HB=b is not None,
            BLOCK=triton.next_power_of_2(N),
        )
    return out


def add_row_bias(x, bias, out):
    if x.dim() != 2 or bias.shape != (x.shape[1],) or out.shape != x.shape:
        raise ValueError("x [M, N], bias [N], out [M, N]")
    return _go(x, bias, out, out.stride(0), out.stride(1))


def transpose(x, out):
    if x.dim() != 2 or out.shape != (x.shape[1], x.shape[0]):
        raise ValueError("x [M, N], out [N, M]")
    return _go(x, None, out, out.stride(1), out.stride(0))
