"""T08 paged decode attention: T07 over a paged KV pool, read through each row's block table,
split over the pages with a second launch that merges the splits.

The pool and table are P21's: k_cache, v_cache [num_blocks, page, Hkv, D] (paged_kv's pool
[num_blocks, Hkv, page, D] seen through .transpose(1, 2), no copy); row b's position p lives
in physical block block_table[b, p // page] at offset p % page; entries past a row's last
page may be -1 (unallocated) and are never read. Pass 1, program (b, g, s): the queries of
KV head g over pages s * SPLIT_PAGES .. (s + 1) * SPLIT_PAGES - 1 of row b, an online
softmax that leaves its partial (max m, sum l, fp32 accumulator) in a workspace. Pass 2,
program (b, g): rescale each split's partial by exp(m_s - max_s m_s) and divide the sums.
"""

from __future__ import annotations

# Before triton: its language functions (tl.max, tl.sum) are jitted when it is imported.
from . import _interpret  # noqa: F401

# isort: split
import torch
import triton
import triton.language as tl
from torch import Tensor

SPLIT_PAGES = 4

LEDGER = {
    "grid": "pass 1 `(B, Hkv, cdiv(max_blocks, 4))`: a row, a KV head, a run of SPLIT_PAGES = 4 "
    "pages; pass 2 `(B, Hkv)`: the merge",
    "tile": "[G, BD] queries of one KV head against one [BP, BD] page of K and V (BP = "
    "next_power_of_2(page)); the workspace [B, Hkv, splits, G] for m and l, [.., BD] for acc",
    "pointer formula": "phys = block_table[b * sbt0 + blk * sbt1]; k + phys * sk0 + offs * sk1 + "
    "g * sk2 + dims (v the same); q, out + b * s0 + heads * s1 + dims",
    "mask": "offs < page and blk * page + offs < lengths[b] (scores -inf past it), dims < D, "
    "heads within the group; only pages below cdiv(lengths[b], page) are visited",
    "traffic": "`total_length * Hkv * D * (size(k_cache) + size(v_cache)) + "
    "B * Hq * D * (size(q) + size(out)) + used_pages * size(block_table)`: each row's "
    "tokens once per KV head, the table's used entries; plus 2 * B * Hkv * splits * G * "
    "(BD + 2) * 4 bytes of workspace",
    "occupancy limiter": "registers as in T07 (G query rows per program); the splits give a "
    "long row's work to more programs, at the cost of the second launch",
    "oracle": "SDPA in float64 over each row's tokens gathered through its block table "
    "(P21's lookup), K/V repeated over the group",
    "benchmark method": "triton.testing.do_bench against SDPA on the gathered caches and the "
    "paged reference, compile excluded, page sizes 8-64, KV GB/s",
}


@triton.jit
def _split_kernel(q_ptr, k_ptr, v_ptr, bt_ptr, len_ptr, m_ptr, l_ptr, acc_ptr, D, page, scale,
                  sq0, sq1, sk0, sk1, sk2, sv0, sv1, sv2, sbt0, sbt1, GROUP: tl.constexpr,
                  G: tl.constexpr, BD: tl.constexpr, BP: tl.constexpr,
                  SPLIT_PAGES: tl.constexpr):  # fmt: skip
    b, g, split = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    heads, dims, offs = g * GROUP + tl.arange(0, G), tl.arange(0, BD), tl.arange(0, BP)
    rows = (tl.arange(0, G) < GROUP)[:, None] & (dims < D)[None, :]
    q = tl.load(q_ptr + b * sq0 + heads[:, None] * sq1 + dims[None, :], mask=rows, other=0.0)
    q = q.to(tl.float32) * scale
    length = tl.load(len_ptr + b)
    m = tl.full((G,), -float("inf"), dtype=tl.float32)
    total = tl.zeros((G,), dtype=tl.float32)
    acc = tl.zeros((G, BD), dtype=tl.float32)
    first = split * SPLIT_PAGES
    for blk in range(first, tl.minimum(first + SPLIT_PAGES, tl.cdiv(length, page))):
        phys = tl.load(bt_ptr + b * sbt0 + blk * sbt1)
        valid = (offs < page) & (blk * page + offs < length)
        kv = valid[:, None] & (dims < D)[None, :]
        k = tl.load(k_ptr + phys * sk0 + offs[:, None] * sk1 + g * sk2 + dims[None, :], mask=kv,
                    other=0.0).to(tl.float32)  # fmt: skip
        s = tl.where(valid[None, :], tl.sum(q[:, None, :] * k[None, :, :], axis=2), -float("inf"))
        m_new = tl.maximum(m, tl.max(s, axis=1))
        p = tl.exp(s - m_new[:, None])
        alpha = tl.exp(m - m_new)
        v = tl.load(v_ptr + phys * sv0 + offs[:, None] * sv1 + g * sv2 + dims[None, :], mask=kv,
                    other=0.0).to(tl.float32)  # fmt: skip
        acc = acc * alpha[:, None] + tl.sum(p[:, :, None] * v[None, :, :], axis=1)
        total = total * alpha + tl.sum(p, axis=1)
        m = m_new
    slot = ((b * tl.num_programs(1) + g) * tl.num_programs(2) + split) * G + tl.arange(0, G)
    tl.store(m_ptr + slot, m)
    tl.store(l_ptr + slot, total)
    tl.store(acc_ptr + slot[:, None] * BD + dims[None, :], acc)


@triton.jit
def _merge_kernel(m_ptr, l_ptr, acc_ptr, out_ptr, D, splits, so0, so1, GROUP: tl.constexpr,
                  G: tl.constexpr, BD: tl.constexpr):  # fmt: skip
    b, g = tl.program_id(0), tl.program_id(1)
    heads, dims = g * GROUP + tl.arange(0, G), tl.arange(0, BD)
    first = (b * tl.num_programs(1) + g) * splits
    top = tl.full((G,), -float("inf"), dtype=tl.float32)
    for split in range(0, splits):
        top = tl.maximum(top, tl.load(m_ptr + (first + split) * G + tl.arange(0, G)))
    num = tl.zeros((G, BD), dtype=tl.float32)
    den = tl.zeros((G,), dtype=tl.float32)
    for split in range(0, splits):
        slot = (first + split) * G + tl.arange(0, G)
        w = tl.exp(tl.load(m_ptr + slot) - top)  # a split with no page: exp(-inf) = 0
        num += w[:, None] * tl.load(acc_ptr + slot[:, None] * BD + dims[None, :])
        den += w * tl.load(l_ptr + slot)
    rows = (tl.arange(0, G) < GROUP)[:, None] & (dims < D)[None, :]
    tl.store(out_ptr + b * so0 + heads[:, None] * so1 + dims[None, :],
             (num / den[:, None]).to(out_ptr.dtype.element_ty), mask=rows)  # fmt: skip


def _check(q: Tensor, k_cache: Tensor, v_cache: Tensor, block_table: Tensor, lengths: Tensor,
           out: Tensor) -> None:  # fmt: skip
    for name, t in (("q", q), ("k_cache", k_cache), ("v_cache", v_cache), ("out", out)):
        if not isinstance(t, Tensor) or t.dim() != 4 or t.stride(-1) != 1:
            raise ValueError(f"{name} must be a 4-D tensor whose head dim has stride 1")
    B, Hq, T, D = q.shape
    if T != 1 or out.shape != q.shape:
        raise ValueError(f"q and out must be [B, Hq, 1, D], got {tuple(q.shape)}, {out.shape}")
    N, page, Hkv, _ = k_cache.shape
    if v_cache.shape != k_cache.shape or k_cache.shape[3] != D or Hkv == 0 or Hq % Hkv:
        raise ValueError(f"k_cache and v_cache must be [blocks, page, Hkv, {D}], Hkv | {Hq}")
    if not isinstance(block_table, Tensor) or block_table.dim() != 2 or block_table.shape[0] != B:
        raise ValueError(f"block_table must be a 2-D integer tensor [{B}, max_blocks]")
    if not isinstance(lengths, Tensor) or lengths.shape != (B,) or not lengths.is_contiguous():
        raise ValueError(f"lengths must be a contiguous integer tensor [{B}]")
    if not bool(((lengths >= 1) & (lengths <= block_table.shape[1] * page)).all()):
        raise ValueError("lengths must lie in 1..max_blocks * page")
    pages = (lengths[:, None] + page - 1) // page  # [B, 1]: the pages each row reads
    used = torch.arange(block_table.shape[1], device=q.device) < pages
    if not bool(((block_table[used] >= 0) & (block_table[used] < N)).all()):
        raise ValueError(f"block_table: a page a row reads is not one of the pool's {N} blocks")


def paged_decode_attention(q: Tensor, k_cache: Tensor, v_cache: Tensor, block_table: Tensor,
                           lengths: Tensor, out: Tensor) -> Tensor:  # fmt: skip
    """out[b, h] = decode attention of q[b, h] over row b's lengths[b] tokens in its pages."""
    _check(q, k_cache, v_cache, block_table, lengths, out)
    B, Hq, _, D = q.shape
    page, Hkv = k_cache.shape[1], k_cache.shape[2]
    group, splits = Hq // Hkv, triton.cdiv(block_table.shape[1], SPLIT_PAGES)
    G, BD = triton.next_power_of_2(group), triton.next_power_of_2(D)
    if B:
        m, total = (torch.empty(B * Hkv * splits * G, device=q.device) for _ in range(2))
        acc = torch.empty(B * Hkv * splits * G * BD, device=q.device)
        _split_kernel[(B, Hkv, splits)](
            q, k_cache, v_cache, block_table, lengths, m, total, acc, D, page, D**-0.5,
            q.stride(0), q.stride(1), *k_cache.stride()[:3], *v_cache.stride()[:3],
            *block_table.stride(), GROUP=group, G=G, BD=BD, BP=triton.next_power_of_2(page),
            SPLIT_PAGES=SPLIT_PAGES,
        )  # fmt: skip
        _merge_kernel[(B, Hkv)](m, total, acc, out, D, splits, out.stride(0), out.stride(1),
                                GROUP=group, G=G, BD=BD)  # fmt: skip
    return out


__all__ = ["LEDGER", "SPLIT_PAGES", "paged_decode_attention"]
