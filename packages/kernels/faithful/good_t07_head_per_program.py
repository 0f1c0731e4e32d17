"""A stranger's T07: one program per query head (no grouping: each KV chunk is read once per
query head), two passes over 32-slot chunks, the row max first and then the sums (another
tiling)."""

VARIABLE = "DRILL_T07_MODULE"

import torch
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
    top = -float("inf")
    for start in range(0, n, BS):
        s_ = start + tl.arange(0, BS)
        m = (s_ < n)[:, None] & (d < D)[None, :]
        kk = tl.load(K + b * k0 + g * k1 + s_[:, None] * k2 + d[None, :], mask=m, other=0.0)
        s = tl.where(s_ < n, tl.sum(q[None, :] * kk.to(tl.float32), axis=1), -float("inf"))
        top = tl.maximum(top, tl.max(s, axis=0))
    acc = tl.zeros((BD,), dtype=tl.float32)
    total = 0.0
    for start in range(0, n, BS):
        s_ = start + tl.arange(0, BS)
        m = (s_ < n)[:, None] & (d < D)[None, :]
        kk = tl.load(K + b * k0 + g * k1 + s_[:, None] * k2 + d[None, :], mask=m, other=0.0)
        vv = tl.load(V + b * v0 + g * v1 + s_[:, None] * v2 + d[None, :], mask=m, other=0.0)
        s = tl.where(s_ < n, tl.sum(q[None, :] * kk.to(tl.float32), axis=1), -float("inf"))
        p = tl.exp(s - top)
        acc += tl.sum(p[:, None] * vv.to(tl.float32), axis=0)
        total += tl.sum(p, axis=0)
    tl.store(O + b * o0 + h * o1 + d, (acc / total).to(O.dtype.element_ty), mask=d < D)


def decode_attention(q, k_cache, v_cache, lengths, out):
    for name, t in (("q", q), ("k_cache", k_cache), ("v_cache", v_cache), ("out", out)):
        if t.dim() != 4 or t.stride(-1) != 1:
            raise ValueError(f"{name} must be 4-D with a contiguous head dim")
    B, Hq, T, D = q.shape
    if T != 1 or out.shape != q.shape:
        raise ValueError("q and out must be [B, Hq, 1, D]")
    if k_cache.shape != v_cache.shape or k_cache.shape[0] != B or k_cache.shape[3] != D:
        raise ValueError("k_cache and v_cache must be [B, Hkv, S, D]")
    if Hq % k_cache.shape[1]:
        raise ValueError("k_cache's heads must divide q's")
    if lengths.shape != (B,) or lengths.dtype not in (torch.int32, torch.int64):
        raise ValueError("lengths must be int [B]")
    if not bool(((lengths >= 1) & (lengths <= k_cache.shape[2])).all()):
        raise ValueError("lengths must lie in 1..S")
    if B:
        k[(B, Hq)](
            q,
            k_cache,
            v_cache,
            lengths.contiguous(),
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
            BS=32,
        )
    return out
