"""T05 extension: the ledger's grid and traffic formulas against the launches and the bytes
a call must move (`gptlab_kernels.ledger`)."""

from __future__ import annotations

import pytest
import torch

from gptlab_kernels.ledger import bytes_of
from gptlab_kernels.suite import assert_ledger_grid, assert_ledger_traffic, device, seeded
from gptlab_testkit import candidate
from gptlab_testkit.oracles import LaunchedGrids

kernel = candidate("DRILL_T05_MODULE")

pytestmark = [pytest.mark.owner("t05"), pytest.mark.extension]


@pytest.mark.clause("T05.11")
@pytest.mark.parametrize(("M", "N", "K"), [(33, 20, 17), (8, 64, 40)])
def test_the_stated_grid_is_the_launch_grid(M, N, K):
    a, b, out = seeded(M, K, seed=1), seeded(K, N, seed=2), torch.empty(M, N, device=device())
    with LaunchedGrids() as seen:
        kernel.matmul_act(a, b, "none", out)
    assert_ledger_grid(kernel, "matmul_act", seen.launches, {"M": M, "N": N, "K": K})


@pytest.mark.clause("T05.11")
@pytest.mark.parametrize(("M", "N", "K", "dtype"),
                         [(33, 20, 17, torch.float32), (8, 64, 40, torch.float16)])  # fmt: skip
@pytest.mark.clause("T05.11")
def test_the_stated_traffic_is_the_bytes_moved(M, N, K, dtype):
    a, b = seeded(M, K, seed=1, dtype=dtype), seeded(K, N, seed=2, dtype=dtype)
    out = torch.empty(M, N, dtype=dtype, device=device())
    sizes = {"a": a.element_size(), "b": b.element_size(), "out": out.element_size()}
    names = {"M": M, "N": N, "K": K}
    assert_ledger_traffic(kernel, "matmul_act", names, sizes, bytes_of(a, b, out))
