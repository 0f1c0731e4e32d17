"""A stranger reads a row's pages as if contiguous in the pool: page blk at block_table[b, 0] +
blk. Right for a fresh allocator's first request, wrong once pages are shuffled or shared."""

VARIABLE = "DRILL_T08_MODULE"
EXPECTED_OWNER = "t08"

import triton
import triton.language as tl


@triton.jit
def k(
    Q,
    K,
    V,
    T,
    L,
    O,
    D,
    page,
    scale,
    q0,
    q1,
    k0,
    k1,
    k2,
    v0,
    v1,
    v2,
    t0,
    o0,
    o1,
    GROUP: tl.constexpr,
    BD: tl.constexpr,
    BP: tl.constexpr,
):
    b, h = tl.program_id(0), tl.program_id(1)
    g = h // GROUP
    d, o = tl.arange(0, BD), tl.arange(0, BP)
    q = tl.load(Q + b * q0 + h * q1 + d, mask=d < D, other=0.0).to(tl.float32) * scale
    n = tl.load(L + b)
    first = tl.load(T + b * t0)
    m = -float("inf")
    total = 0.0
    acc = tl.zeros((BD,), dtype=tl.float32)
    for blk in range(0, tl.cdiv(n, page)):
        ok = (o < page) & (blk * page + o < n)
        mk = ok[:, None] & (d < D)[None, :]
        kk = tl.load(
            K + (first + blk) * k0 + o[:, None] * k1 + g * k2 + d[None, :], mask=mk, other=0.0
        )
        s = tl.where(ok, tl.sum(q[None, :] * kk.to(tl.float32), axis=1), -float("inf"))
        new = tl.maximum(m, tl.max(s, axis=0))
        p = tl.exp(s - new)
        vv = tl.load(
            V + (first + blk) * v0 + o[:, None] * v1 + g * v2 + d[None, :], mask=mk, other=0.0
        )
        acc = acc * tl.exp(m - new) + tl.sum(p[:, None] * vv.to(tl.float32), axis=0)
        total = total * tl.exp(m - new) + tl.sum(p, axis=0)
        m = new
    tl.store(O + b * o0 + h * o1 + d, (acc / total).to(O.dtype.element_ty), mask=d < D)


def paged_decode_attention(q, k_cache, v_cache, block_table, lengths, out):
    B, Hq, _, D = q.shape
    page, Hkv = k_cache.shape[1], k_cache.shape[2]
    if B:
        k[(B, Hq)](
            q,
            k_cache,
            v_cache,
            block_table,
            lengths,
            out,
            D,
            page,
            D**-0.5,
            q.stride(0),
            q.stride(1),
            *k_cache.stride()[:3],
            *v_cache.stride()[:3],
            block_table.stride(0),
            out.stride(0),
            out.stride(1),
            GROUP=Hq // Hkv,
            BD=triton.next_power_of_2(D),
            BP=triton.next_power_of_2(page),
        )
    return out
