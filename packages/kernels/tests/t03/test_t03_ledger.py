"""T03 extension: the ledger's grid and traffic formulas against the launches and the bytes
a call must move (`gptlab_kernels.ledger`)."""

from __future__ import annotations

import pytest
import torch

from gptlab_kernels.ledger import bytes_of
from gptlab_kernels.suite import assert_ledger_grid, assert_ledger_traffic, device, seeded
from gptlab_testkit import candidate
from gptlab_testkit.oracles import LaunchedGrids

kernel = candidate("DRILL_T03_MODULE")

pytestmark = [pytest.mark.owner("t03"), pytest.mark.extension]


@pytest.mark.clause("T03.10")
@pytest.mark.parametrize(("M", "N"), [(5, 37), (2, 256)])
def test_the_stated_grid_is_the_launch_grid(M, N):
    x, out = seeded(M, N, seed=1), torch.empty(M, N, device=device())
    with LaunchedGrids() as seen:
        kernel.softmax(x, out)
    assert_ledger_grid(kernel, "softmax", seen.launches, {"M": M, "N": N})


@pytest.mark.clause("T03.10")
@pytest.mark.parametrize(("M", "N", "dtype"), [(5, 37, torch.float32), (2, 256, torch.float16)])
def test_the_stated_traffic_is_the_bytes_moved(M, N, dtype):
    x, out = seeded(M, N, seed=1, dtype=dtype), torch.empty(M, N, dtype=dtype, device=device())
    sizes = {"x": x.element_size(), "out": out.element_size()}
    assert_ledger_traffic(kernel, "softmax", {"M": M, "N": N}, sizes, bytes_of(x, out))
