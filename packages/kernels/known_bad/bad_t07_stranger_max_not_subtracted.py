"""A stranger, one program per query head, sums exp(score) with no running max: scores near
1000 overflow exp to inf, and inf / inf is NaN."""

VARIABLE = "DRILL_T07_MODULE"
EXPECTED_OWNER = "t07"

import triton
import triton.language as tl


@triton.jit
def k(
    Q,
    K,
    V,
    L,
    O,
    D,
    scale,
    q0,
    q1,
    k0,
    k1,
    k2,
    v0,
    v1,
    v2,
    o0,
    o1,
    GROUP: tl.constexpr,
    BD: tl.constexpr,
    BS: tl.constexpr,
):
    b, h = tl.program_id(0), tl.program_id(1)
    g = h // GROUP
    d = tl.arange(0, BD)
    q = tl.load(Q + b * q0 + h * q1 + d, mask=d < D, other=0.0).to(tl.float32) * scale
    n = tl.load(L + b)
    acc = tl.zeros((BD,), dtype=tl.float32)
    total = 0.0
    for start in range(0, n, BS):
        s_ = start + tl.arange(0, BS)
        m = (s_ < n)[:, None] & (d < D)[None, :]
        kk = tl.load(K + b * k0 + g * k1 + s_[:, None] * k2 + d[None, :], mask=m, other=0.0)
        vv = tl.load(V + b * v0 + g * v1 + s_[:, None] * v2 + d[None, :], mask=m, other=0.0)
        p = tl.where(s_ < n, tl.exp(tl.sum(q[None, :] * kk.to(tl.float32), axis=1)), 0.0)
        acc += tl.sum(p[:, None] * vv.to(tl.float32), axis=0)
        total += tl.sum(p, axis=0)
    tl.store(O + b * o0 + h * o1 + d, (acc / total).to(O.dtype.element_ty), mask=d < D)


def decode_attention(q, k_cache, v_cache, lengths, out):
    B, Hq, _, D = q.shape
    if B:
        k[(B, Hq)](
            q,
            k_cache,
            v_cache,
            lengths,
            out,
            D,
            D**-0.5,
            q.stride(0),
            q.stride(1),
            *k_cache.stride()[:3],
            *v_cache.stride()[:3],
            out.stride(0),
            out.stride(1),
            GROUP=Hq // k_cache.shape[1],
            BD=triton.next_power_of_2(D),
            BS=16,
        )
    return out
