"""T08 paged_decode_attention(q, k_cache, v_cache, block_table, lengths, out): T07 over a
paged pool (P21's layout and block table): shuffled pages, page-edge crossings, ragged
lengths, shared prefix pages and long rows split over the pages."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from gptlab_kernels.guards import (
    assert_no_load_outside,
    assert_no_store_outside,
    guarded,
    guarded_output,
)
from gptlab_kernels.suite import device, seeded
from gptlab_testkit import assert_close, candidate
from gptlab_testkit.oracles import assert_binds

kernel = candidate("DRILL_T08_MODULE")

pytestmark = [pytest.mark.owner("t08"), pytest.mark.contract]


def gathered(cache, table_row, length):
    """[Hkv, length, D]: a row's tokens looked up through its table (P21's rule)."""
    page = cache.shape[1]
    positions = torch.arange(length, device=cache.device)
    return cache[table_row[positions // page].long(), positions % page].transpose(0, 1)


def oracle(q, k_cache, v_cache, block_table, lengths):
    group = q.shape[1] // k_cache.shape[2]
    rows = []
    for b, length in enumerate(lengths.tolist()):
        k = gathered(k_cache, block_table[b], length).double().repeat_interleave(group, 0)
        v = gathered(v_cache, block_table[b], length).double().repeat_interleave(group, 0)
        rows.append(F.scaled_dot_product_attention(q[b].double(), k, v))
    return torch.stack(rows)


def paged(lengths, page, num_blocks, Hkv, D, seed, shared=0, spare=1):
    """A pool whose pages no row reads hold NaN, and a shuffled table with `spare` entries
    past the longest row's pages (-1 past each row's pages); with `shared`, every row's
    first `shared` pages are row 0's."""
    order = torch.randperm(num_blocks, generator=torch.Generator().manual_seed(seed)).tolist()
    width = max(-(-n // page) for n in lengths) + spare
    table = torch.full((len(lengths), width), -1, dtype=torch.int64)
    for b, n in enumerate(lengths):
        for i in range(-(-n // page)):
            table[b, i] = table[0, i] if i < shared and b else order.pop()
    k = seeded(num_blocks, page, Hkv, D, seed=seed)
    v = seeded(num_blocks, page, Hkv, D, seed=seed + 1)
    unread = torch.ones(num_blocks, dtype=torch.bool)
    unread[table[table >= 0]] = False
    k[unread.to(device())], v[unread.to(device())] = float("nan"), float("nan")
    return k, v, table.to(device()), torch.tensor(lengths, device=device())


def checked(q, k, v, table, lengths, what):
    gq, gk, gv = guarded("q", q), guarded("k_cache", k), guarded("v_cache", v)
    k_before, v_before = k.clone(), v.clone()
    out = guarded_output("out", tuple(q.shape), q.dtype, device())

    def run():
        return kernel.paged_decode_attention(gq.view, gk.view, gv.view, table, lengths, out.view)

    run()
    assert_no_store_outside(out, gq, gk, gv)
    assert_no_load_outside(run, out.view, [gq, gk, gv], f"{what} (or an unread page's NaN)")
    assert torch.equal(gk.view.nan_to_num(), k_before.nan_to_num()), "the K pool was written"
    assert torch.equal(gv.view.nan_to_num(), v_before.nan_to_num()), "the V pool was written"
    expected = oracle(q, k, v, table, lengths)
    assert_close(out.view.double(), expected, what, rtol=1e-5, atol=1e-5)


@pytest.mark.clause("T08.1")
def test_the_signature_takes_six_positional_arguments_and_returns_out():
    k, v, table, lengths = paged([5, 9], 4, 8, 2, 16, seed=1)
    q = seeded(2, 4, 1, 16, seed=2)
    out = torch.empty_like(q)

    assert_binds(kernel.paged_decode_attention, q, k, v, table, lengths, out)
    got = kernel.paged_decode_attention(q, k, v, table, lengths, out)

    expected = oracle(q, k, v, table, lengths).float()
    assert_close(got, expected, "the returned tensor", rtol=1e-5, atol=1e-5)
    assert_close(out, expected, "out, written in place", rtol=1e-5, atol=1e-5)


@pytest.mark.clause("T08.2")
@pytest.mark.parametrize(("page", "lengths"), [(16, (1, 16, 17, 40)), (5, (5, 6, 11, 24))])
def test_shuffled_pages_page_edges_and_ragged_lengths(page, lengths):
    k, v, table, lengths = paged(list(lengths), page, 24, 2, 16, seed=page)
    q = seeded(4, 4, 1, 16, seed=page + 1)

    checked(q, k, v, table, lengths, f"page {page}, lengths {lengths.tolist()}")


@pytest.mark.clause("T08.2")
@pytest.mark.parametrize("Hkv", [4, 1])
def test_the_query_heads_of_a_kv_head_read_its_pages(Hkv):
    k, v, table, lengths = paged([13, 7], 8, 6, Hkv, 32, seed=Hkv + 20)
    q = seeded(2, 4, 1, 32, seed=Hkv + 21)

    checked(q, k, v, table, lengths, f"Hq=4, Hkv={Hkv}")


@pytest.mark.clause("T08.3")
@pytest.mark.parametrize(("page", "shared"), [(8, 2), (5, 3)])
def test_rows_sharing_prefix_pages_read_them_and_leave_them_as_they_were(page, shared):
    k, v, table, lengths = paged([3 * page + 2, 4 * page, shared * page], page, 20, 2, 16,
                                 seed=page + 30, shared=shared, spare=0)  # fmt: skip
    q = seeded(3, 2, 1, 16, seed=page + 31)

    checked(q, k, v, table, lengths, f"{shared} shared pages of {page}")


@pytest.mark.clause("T08.4")
@pytest.mark.parametrize(("page", "lengths"), [(4, (61, 3)), (8, (50, 97))])
def test_long_rows_over_many_pages_match_a_single_pass(page, lengths):
    k, v, table, lengths = paged(list(lengths), page, 24, 1, 16, seed=page + 40)
    q = seeded(2, 2, 1, 16, seed=page + 41, scale=3)

    checked(q, k, v, table, lengths, f"long rows, page {page}, lengths {lengths.tolist()}")
