"""A stranger's grouped order assumes every group is GROUP_M tile rows tall: where the tile rows
are not a multiple of the group, the last group's programs land on rows past M and tiles of
out are never written."""

VARIABLE = "DRILL_T05_MODULE"
EXPECTED_OWNER = "t05"

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
    G: tl.constexpr,
):
    pid = tl.program_id(0)
    tn = tl.cdiv(N, BN)
    pm = (pid // (G * tn)) * G + (pid % (G * tn)) % G
    pn = (pid % (G * tn)) // G
    r = pm * BM + tl.arange(0, BM)
    c = pn * BN + tl.arange(0, BN)
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
        acc = acc / (1.0 + tl.exp(-acc))
    elif ACT == "gelu":
        acc = 0.5 * acc * (1.0 + tl.math.erf(acc * 0.7071067811865476))
    tl.store(
        O + r[:, None] * o0 + c[None, :] * o1,
        acc.to(O.dtype.element_ty),
        mask=(r < M)[:, None] & (c < N)[None, :],
    )


def matmul_act(a, b, activation, out):
    (M, K), N = a.shape, b.shape[1]
    if M and N:
        grid = (triton.cdiv(M, 16) * triton.cdiv(N, 32),)
        k[grid](
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
            BN=32,
            BK=32,
            G=4,
        )
    return out
