"""A stranger's T08: one program per query head walks all its row's pages in one pass (no
split, no second launch, no grouping: another tiling), an online softmax over each page."""

VARIABLE = "DRILL_T08_MODULE"

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
    t1,
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
    m = -float("inf")
    total = 0.0
    acc = tl.zeros((BD,), dtype=tl.float32)
    for blk in range(0, tl.cdiv(n, page)):
        phys = tl.load(T + b * t0 + blk * t1).to(tl.int64)
        ok = (o < page) & (blk * page + o < n)
        mk = ok[:, None] & (d < D)[None, :]
        kk = tl.load(K + phys * k0 + o[:, None] * k1 + g * k2 + d[None, :], mask=mk, other=0.0)
        s = tl.where(ok, tl.sum(q[None, :] * kk.to(tl.float32), axis=1), -float("inf"))
        new = tl.maximum(m, tl.max(s, axis=0))
        p = tl.exp(s - new)
        vv = tl.load(V + phys * v0 + o[:, None] * v1 + g * v2 + d[None, :], mask=mk, other=0.0)
        acc = acc * tl.exp(m - new) + tl.sum(p[:, None] * vv.to(tl.float32), axis=0)
        total = total * tl.exp(m - new) + tl.sum(p, axis=0)
        m = new
    tl.store(O + b * o0 + h * o1 + d, (acc / total).to(O.dtype.element_ty), mask=d < D)


def paged_decode_attention(q, k_cache, v_cache, block_table, lengths, out):
    for name, t in (("q", q), ("k_cache", k_cache), ("v_cache", v_cache), ("out", out)):
        if t.dim() != 4 or t.stride(-1) != 1:
            raise ValueError(f"{name} must be 4-D with a contiguous head dim")
    B, Hq, _, D = q.shape
    N, page, Hkv, _ = k_cache.shape
    if v_cache.shape != k_cache.shape or Hq % Hkv or out.shape != q.shape:
        raise ValueError("k_cache and v_cache must be [blocks, page, Hkv, D] with Hkv | Hq")
    if lengths.shape != (B,) or not bool(
        ((lengths >= 1) & (lengths <= block_table.shape[1] * page)).all()
    ):
        raise ValueError("lengths must lie in 1..max_blocks * page")
    for b, n in enumerate(lengths.tolist()):
        row = block_table[b, : -(-n // page)]
        if bool(((row < 0) | (row >= N)).any()):
            raise ValueError("block_table: a page a row reads is not in the pool")
    if B:
        k[(B, Hq)](
            q,
            k_cache,
            v_cache,
            block_table,
            lengths.contiguous(),
            out,
            D,
            page,
            D**-0.5,
            q.stride(0),
            q.stride(1),
            *k_cache.stride()[:3],
            *v_cache.stride()[:3],
            *block_table.stride(),
            out.stride(0),
            out.stride(1),
            GROUP=Hq // Hkv,
            BD=triton.next_power_of_2(D),
            BP=triton.next_power_of_2(page),
        )
    return out
