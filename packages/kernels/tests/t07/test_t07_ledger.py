"""T07 extension: the ledger's grid and traffic formulas against the launches and the bytes
a call must move (`gptlab_kernels.ledger`)."""

from __future__ import annotations

import pytest
import torch

from gptlab_kernels.ledger import bytes_of
from gptlab_kernels.suite import assert_ledger_grid, assert_ledger_traffic, device, seeded
from gptlab_testkit import candidate
from gptlab_testkit.oracles import LaunchedGrids

kernel = candidate("DRILL_T07_MODULE")

pytestmark = [pytest.mark.owner("t07"), pytest.mark.extension]


def case(B, Hq, Hkv, S, D, lengths, dtype=torch.float32):
    q = seeded(B, Hq, 1, D, seed=1, dtype=dtype)
    k, v = seeded(B, Hkv, S, D, seed=2, dtype=dtype), seeded(B, Hkv, S, D, seed=3, dtype=dtype)
    return q, k, v, torch.tensor(lengths, device=device()), torch.empty_like(q)


SHAPES = [(2, 4, 2, 30, 32, [30, 7]), (3, 6, 1, 20, 16, [1, 20, 9])]


@pytest.mark.clause("T07.10")
@pytest.mark.parametrize(("B", "Hq", "Hkv", "S", "D", "lengths"), SHAPES)
def test_the_stated_grid_is_the_launch_grid(B, Hq, Hkv, S, D, lengths):
    q, k, v, lens, out = case(B, Hq, Hkv, S, D, lengths)
    names = {"B": B, "Hq": Hq, "Hkv": Hkv, "D": D, "total_length": sum(lengths)}
    with LaunchedGrids() as seen:
        kernel.decode_attention(q, k, v, lens, out)
    assert_ledger_grid(kernel, "decode_attention", seen.launches, names)


@pytest.mark.clause("T07.10")
@pytest.mark.parametrize(("B", "Hq", "Hkv", "S", "D", "lengths"), SHAPES)
def test_the_stated_traffic_is_the_bytes_moved(B, Hq, Hkv, S, D, lengths):
    q, k, v, _, out = case(B, Hq, Hkv, S, D, lengths, torch.float16)
    names = {"B": B, "Hq": Hq, "Hkv": Hkv, "D": D, "total_length": sum(lengths)}
    sizes = {"q": 2, "k_cache": 2, "v_cache": 2, "out": 2}
    valid_kv = sum(lengths) * Hkv * D * (k.element_size() + v.element_size())  # the rest unread
    assert_ledger_traffic(kernel, "decode_attention", names, sizes, bytes_of(q, out) + valid_kv)
