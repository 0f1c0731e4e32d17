"""T08 extension: the ledger's grid and traffic formulas against the launches and the bytes
a call must move (`gptlab_kernels.ledger`)."""

from __future__ import annotations

import pytest
import torch

from gptlab_kernels.ledger import bytes_of
from gptlab_kernels.suite import assert_ledger_grid, assert_ledger_traffic, device, seeded
from gptlab_testkit import candidate
from gptlab_testkit.oracles import LaunchedGrids

kernel = candidate("DRILL_T08_MODULE")

pytestmark = [pytest.mark.owner("t08"), pytest.mark.extension]


PAGES = [[4, 0, 2], [5], [1, 3, 6, 7, 8]]  # 5 pages in the widest row: two splits of 4


def case(lengths, dtype=torch.float32, page=8, Hq=4, Hkv=2, D=32):
    k = seeded(9, page, Hkv, D, seed=1, dtype=dtype)
    v = seeded(9, page, Hkv, D, seed=2, dtype=dtype)
    table = torch.full((len(lengths), 5), -1, dtype=torch.int64)
    for b, row in enumerate(PAGES[: len(lengths)]):
        table[b, : len(row)] = torch.tensor(row)
    q = seeded(len(lengths), Hq, 1, D, seed=3, dtype=dtype)
    return q, k, v, table.to(device()), torch.tensor(lengths, device=device()), torch.empty_like(q)


def names_of(lengths, page=8, Hq=4, Hkv=2, D=32):
    used = sum(-(-length // page) for length in lengths)
    return {"B": len(lengths), "Hq": Hq, "Hkv": Hkv, "D": D, "page": page, "max_blocks": 5,
            "total_length": sum(lengths), "used_pages": used}  # fmt: skip


@pytest.mark.clause("T08.10")
@pytest.mark.parametrize("lengths", [[20, 8, 37], [1, 3]])
def test_the_stated_grids_are_the_launch_grids_of_both_passes(lengths):
    q, k, v, table, lens, out = case(lengths)
    with LaunchedGrids() as seen:
        kernel.paged_decode_attention(q, k, v, table, lens, out)
    assert_ledger_grid(kernel, "paged_decode_attention", seen.launches, names_of(lengths))


@pytest.mark.clause("T08.10")
@pytest.mark.parametrize("lengths", [[20, 8, 37], [1, 3]])
def test_the_stated_traffic_is_the_bytes_moved(lengths):
    q, k, v, _, _, out = case(lengths, torch.float16)
    sizes = {"q": 2, "k_cache": 2, "v_cache": 2, "out": 2, "block_table": 8}
    valid_kv = sum(lengths) * 2 * 32 * (k.element_size() + v.element_size())  # the rest unread
    moved = bytes_of(q, out) + valid_kv
    assert_ledger_traffic(kernel, "paged_decode_attention", names_of(lengths), sizes, moved)
