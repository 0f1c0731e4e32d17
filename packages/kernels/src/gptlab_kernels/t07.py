"""T07 decode attention with GQA grouping: one new query token per row over its contiguous
KV cache, every query head that shares a KV head in one program.

The shapes and rules are P19's: q [B, Hq, 1, D]; k_cache, v_cache [B, Hkv, S, D] (S the
capacity); lengths [B] (1 <= lengths[b] <= S); query head h reads KV head h // (Hq / Hkv);
slots at or past a row's length are capacity, whatever they hold. Program (b, g) loads the
GROUP query rows of KV head g once, then walks the row's slots in BS-slot chunks with an
online softmax (running max m, running sum l, fp32 accumulator): each K and V chunk is read
once for the whole group, not once per query head. The head dim is padded to BD lanes.
"""

from __future__ import annotations

# Before triton: its language functions (tl.max, tl.sum) are jitted when it is imported.
from . import _interpret  # noqa: F401

# isort: split
import torch
import triton
import triton.language as tl
from torch import Tensor

BS = 16

LEDGER = {
    "grid": "`(B, Hkv)`: one program per row and KV head, serving its GROUP = Hq / Hkv queries",
    "tile": "[G, BD] queries (G = next_power_of_2(GROUP), BD = next_power_of_2(D)) against "
    "[BS = 16, BD] chunks of K and V",
    "pointer formula": "q + b * sq0 + heads * sq1 + dims; k + b * sk0 + g * sk1 + slots * sk2 + "
    "dims (v the same, its own strides); heads = g * GROUP + arange(G); the head dim stride 1",
    "mask": "heads < (g + 1) * GROUP rows, dims < D lanes, slots < lengths[b] (scores -inf past "
    "the length, so capacity never counts)",
    "traffic": "`total_length * Hkv * D * (size(k_cache) + size(v_cache)) + "
    "B * Hq * D * (size(q) + size(out))`, total_length the sum of lengths: "
    "K/V read once per KV head, GROUP times less than one program per query head",
    "occupancy limiter": "registers: the [G, BS, BD] products and the [G, BD] fp32 accumulator "
    "grow with the group; one program per (b, g) leaves the GPU idle when B * Hkv is small "
    "(then split the slots: T08)",
    "oracle": "torch scaled_dot_product_attention in float64 over each row's first lengths[b] "
    "slots, K/V repeated over the group",
    "benchmark method": "triton.testing.do_bench against SDPA on the same caches (a length "
    "mask), compile excluded, KV GB/s",
}


@triton.jit
def _decode_kernel(q_ptr, k_ptr, v_ptr, len_ptr, out_ptr, D, scale, sq0, sq1, sk0, sk1, sk2,
                   sv0, sv1, sv2, so0, so1, GROUP: tl.constexpr, G: tl.constexpr,
                   BD: tl.constexpr, BS: tl.constexpr):  # fmt: skip
    b, g = tl.program_id(0), tl.program_id(1)
    heads = g * GROUP + tl.arange(0, G)
    dims = tl.arange(0, BD)
    rows = (tl.arange(0, G) < GROUP)[:, None] & (dims < D)[None, :]
    q = tl.load(q_ptr + b * sq0 + heads[:, None] * sq1 + dims[None, :], mask=rows, other=0.0)
    q = q.to(tl.float32) * scale
    length = tl.load(len_ptr + b)
    m = tl.full((G,), -float("inf"), dtype=tl.float32)
    total = tl.zeros((G,), dtype=tl.float32)
    acc = tl.zeros((G, BD), dtype=tl.float32)
    for start in range(0, length, BS):
        slots = start + tl.arange(0, BS)
        valid = slots < length
        kv = valid[:, None] & (dims < D)[None, :]
        k = tl.load(k_ptr + b * sk0 + g * sk1 + slots[:, None] * sk2 + dims[None, :], mask=kv,
                    other=0.0).to(tl.float32)  # fmt: skip
        s = tl.sum(q[:, None, :] * k[None, :, :], axis=2)  # [G, BS]
        s = tl.where(valid[None, :], s, -float("inf"))
        m_new = tl.maximum(m, tl.max(s, axis=1))
        p = tl.exp(s - m_new[:, None])
        alpha = tl.exp(m - m_new)
        v = tl.load(v_ptr + b * sv0 + g * sv1 + slots[:, None] * sv2 + dims[None, :], mask=kv,
                    other=0.0).to(tl.float32)  # fmt: skip
        acc = acc * alpha[:, None] + tl.sum(p[:, :, None] * v[None, :, :], axis=1)
        total = total * alpha + tl.sum(p, axis=1)
        m = m_new
    out = (acc / total[:, None]).to(out_ptr.dtype.element_ty)
    tl.store(out_ptr + b * so0 + heads[:, None] * so1 + dims[None, :], out, mask=rows)


def _check(q: Tensor, k_cache: Tensor, v_cache: Tensor, lengths: Tensor, out: Tensor) -> None:
    for name, t in (("q", q), ("k_cache", k_cache), ("v_cache", v_cache), ("out", out)):
        if not isinstance(t, Tensor) or t.dim() != 4 or t.stride(-1) != 1:
            raise ValueError(f"{name} must be a 4-D tensor whose head dim has stride 1")
    B, Hq, T, D = q.shape
    if T != 1 or out.shape != q.shape:
        raise ValueError(f"q and out must be [B, Hq, 1, D], got {tuple(q.shape)}, {out.shape}")
    if k_cache.shape != v_cache.shape or k_cache.shape[0] != B or k_cache.shape[3] != D:
        raise ValueError(f"k_cache and v_cache must be [{B}, Hkv, S, {D}]")
    if k_cache.shape[1] == 0 or Hq % k_cache.shape[1]:
        raise ValueError(f"k_cache's heads must divide q's {Hq}")
    if not isinstance(lengths, Tensor) or lengths.shape != (B,) or lengths.dtype not in (
        torch.int32, torch.int64) or not lengths.is_contiguous():  # fmt: skip
        raise ValueError(f"lengths must be a contiguous int32 or int64 tensor [{B}]")
    if B and not bool(((lengths >= 1) & (lengths <= k_cache.shape[2])).all()):
        raise ValueError(f"lengths must lie in 1..{k_cache.shape[2]} (the capacity)")


def decode_attention(q: Tensor, k_cache: Tensor, v_cache: Tensor, lengths: Tensor,
                     out: Tensor) -> Tensor:  # fmt: skip
    """out[b, h] = softmax(q[b, h] k^T / sqrt(D)) v over row b's first lengths[b] slots."""
    _check(q, k_cache, v_cache, lengths, out)
    B, Hq, _, D = q.shape
    Hkv = k_cache.shape[1]
    group = Hq // Hkv
    if B:
        _decode_kernel[(B, Hkv)](q, k_cache, v_cache, lengths, out, D, D**-0.5, q.stride(0),
                                 q.stride(1), *k_cache.stride()[:3], *v_cache.stride()[:3],
                                 out.stride(0), out.stride(1), GROUP=group,
                                 G=triton.next_power_of_2(group), BD=triton.next_power_of_2(D),
                                 BS=BS)  # fmt: skip
    return out


__all__ = ["LEDGER", "decode_attention"]
