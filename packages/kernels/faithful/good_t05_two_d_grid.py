"""A stranger's T05: a 2-D grid in plain row-major program order (no grouping), 16 x 64 tiles
stepping K by 16 (another tiling), every operand widened to fp32 before the dot."""

VARIABLE = "DRILL_T05_MODULE"

import triton
import triton.language as tl


@triton.jit
def k(
    A,
    B,
    O,
    M,
    N,
    K,
    a0,
    a1,
    b0,
    b1,
    o0,
    o1,
    ACT: tl.constexpr,
    BM: tl.constexpr,
    BN: tl.constexpr,
    BK: tl.constexpr,
):
    r = tl.program_id(0) * BM + tl.arange(0, BM)
    c = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        q = k0 + tl.arange(0, BK)
        a = tl.load(
            A + r[:, None] * a0 + q[None, :] * a1,
            mask=(r < M)[:, None] & (q < K)[None, :],
            other=0.0,
        )
        b = tl.load(
            B + q[:, None] * b0 + c[None, :] * b1,
            mask=(q < K)[:, None] & (c < N)[None, :],
            other=0.0,
        )
        acc += tl.dot(a.to(tl.float32), b.to(tl.float32), input_precision="ieee")
    if ACT == "silu":
        acc = acc * tl.sigmoid(acc)
    elif ACT == "gelu":
        acc = 0.5 * acc * (1.0 + tl.math.erf(acc / 1.4142135623730951))
    tl.store(
        O + r[:, None] * o0 + c[None, :] * o1,
        acc.to(O.dtype.element_ty),
        mask=(r < M)[:, None] & (c < N)[None, :],
    )


def matmul_act(a, b, activation, out):
    if a.dim() != 2:
        raise ValueError("a must be [M, K]")
    if b.dim() != 2 or b.shape[0] != a.shape[1] or b.dtype != a.dtype:
        raise ValueError("b must be [K, N] of a's dtype")
    if activation not in ("none", "silu", "gelu"):
        raise ValueError("activation must be none, silu or gelu")
    (M, K), N = a.shape, b.shape[1]
    if tuple(out.shape) != (M, N):
        raise ValueError("out must be [M, N]")
    if M and N:
        k[(triton.cdiv(M, 16), triton.cdiv(N, 64))](
            a,
            b,
            out,
            M,
            N,
            K,
            *a.stride(),
            *b.stride(),
            *out.stride(),
            ACT=activation,
            BM=16,
            BN=64,
            BK=16,
        )
    return out
