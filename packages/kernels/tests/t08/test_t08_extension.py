"""T08 extension: half inputs, the engine's head-major pool and a strided int32 table,
rejections, ledger."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from gptlab_kernels.guards import assert_no_store_outside, guarded_output
from gptlab_kernels.suite import device, ledger_gaps, seeded
from gptlab_testkit import assert_close, assert_rejects, candidate

kernel = candidate("DRILL_T08_MODULE")

pytestmark = [pytest.mark.owner("t08"), pytest.mark.extension]


def oracle(q, k_cache, v_cache, block_table, lengths):
    group, page = q.shape[1] // k_cache.shape[2], k_cache.shape[1]
    rows = []
    for b, length in enumerate(lengths.tolist()):
        p = torch.arange(length, device=q.device)
        blocks = block_table[b, p // page].long()
        k = k_cache[blocks, p % page].transpose(0, 1).double().repeat_interleave(group, 0)
        v = v_cache[blocks, p % page].transpose(0, 1).double().repeat_interleave(group, 0)
        rows.append(F.scaled_dot_product_attention(q[b].double(), k, v))
    return torch.stack(rows)


def table_of(rows, width, dtype=torch.int64):
    table = torch.full((len(rows), width), -1, dtype=dtype)
    for b, row in enumerate(rows):
        table[b, : len(row)] = torch.tensor(row, dtype=dtype)
    return table.to(device())


@pytest.mark.clause("T08.6")
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_inputs_are_computed_in_fp32_and_rounded_once(dtype):
    k, v = seeded(6, 8, 2, 32, seed=1, dtype=dtype), seeded(6, 8, 2, 32, seed=2, dtype=dtype)
    table, lengths = table_of([[4, 0, 2], [5]], 4), torch.tensor([20, 8], device=device())
    q = seeded(2, 4, 1, 32, seed=3, dtype=dtype)
    out = torch.empty_like(q)

    kernel.paged_decode_attention(q, k, v, table, lengths, out)

    ulp = 2.0**-10 if dtype == torch.float16 else 2.0**-7
    expected = oracle(q, k, v, table, lengths)
    assert_close(out.double(), expected, f"{dtype}", rtol=2 * ulp, atol=2 * ulp)


@pytest.mark.clause("T08.7")
def test_the_engines_head_major_pool_and_a_strided_int32_table_are_read_in_place():
    N, Hkv, page, D = 7, 2, 4, 16
    # the pool as paged_kv allocates it: [Hkv, N * page, D], seen as [N, page, Hkv, D]
    k_pool, v_pool = seeded(Hkv, N * page, D, seed=4), seeded(Hkv, N * page, D, seed=5)
    k = k_pool.view(Hkv, N, page, D).permute(1, 2, 0, 3)
    v = v_pool.view(Hkv, N, page, D).permute(1, 2, 0, 3)
    wide = table_of([[9, 6, 9, 1, 9, 3], [9, 2, 9, 5, 9, -1]], 6, torch.int32)
    table, lengths = wide[:, 1::2], torch.tensor([10, 7], device=device())  # [2, 3], stride 2
    q = seeded(2, 1, 4, 16, seed=6).transpose(1, 2)  # [B, Hq, 1, D] from [B, 1, Hq, D]
    out = guarded_output("out", (2, 4, 1, D), torch.float32, device(), (4 * 2 * D, 2 * D, D, 1))

    kernel.paged_decode_attention(q, k, v, table, lengths, out.view)

    assert_no_store_outside(out)
    assert_close(out.view.double(), oracle(q, k, v, table, lengths), "in place", rtol=1e-5,
                 atol=1e-5)  # fmt: skip


@pytest.mark.clause("T08.8")
@pytest.mark.parametrize(
    ("rows", "lengths", "name"),
    [
        ([[0, 1], [2, -1]], [8, 5], "block_table"),  # row 1 reads its unallocated 2nd page
        ([[0, 1], [2, 7]], [8, 8], "block_table"),  # block 7 is not in the pool
        ([[0, 1], [2, 3]], [9, 4], "lengths"),  # past max_blocks * page
        ([[0, 1], [2, 3]], [0, 4], "lengths"),
    ],
)
def test_tables_and_lengths_that_do_not_fit_are_rejected_naming_them(rows, lengths, name):
    k = torch.zeros(4, 4, 1, 8, device=device())
    q = torch.zeros(2, 2, 1, 8, device=device())
    table, lengths = table_of(rows, 2), torch.tensor(lengths, device=device())

    assert_rejects(lambda: kernel.paged_decode_attention(q, k, k, table, lengths, q.clone()),
                   ValueError, name)  # fmt: skip


@pytest.mark.clause("T08.8")
def test_kv_heads_that_do_not_divide_the_query_heads_are_rejected():
    k, q = torch.zeros(4, 4, 2, 8, device=device()), torch.zeros(1, 3, 1, 8, device=device())
    table, lengths = table_of([[0]], 1), torch.tensor([2], device=device())

    assert_rejects(lambda: kernel.paged_decode_attention(q, k, k, table, lengths, q.clone()),
                   ValueError, "k_cache")  # fmt: skip


@pytest.mark.clause("T08.9")
def test_the_ledger_fills_its_eight_fields():
    assert not ledger_gaps(getattr(kernel, "LEDGER", None)), "LEDGER lacks fields"
