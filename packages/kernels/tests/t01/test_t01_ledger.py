"""T01 extension: the ledger's grid and traffic formulas against the launches and the bytes
a call must move (`gptlab_kernels.ledger`)."""

from __future__ import annotations

import pytest
import torch

from gptlab_kernels.ledger import bytes_of
from gptlab_kernels.suite import assert_ledger_grid, assert_ledger_traffic, device, seeded
from gptlab_testkit import candidate
from gptlab_testkit.oracles import LaunchedGrids

kernel = candidate("DRILL_T01_MODULE")

pytestmark = [pytest.mark.owner("t01"), pytest.mark.extension]


@pytest.mark.clause("T01.11")
@pytest.mark.parametrize("n", [1000, 37])
def test_the_stated_grid_is_the_launch_grid(n):
    x, y, out = seeded(n, seed=1), seeded(n, seed=2), torch.empty(n, device=device())
    with LaunchedGrids() as seen:
        kernel.axpy(2.0, x, y, out)
    assert_ledger_grid(kernel, "axpy", seen.launches, {"n": n})


@pytest.mark.clause("T01.11")
@pytest.mark.parametrize(("n", "dtype"), [(1000, torch.float32), (37, torch.float16)])
def test_the_stated_traffic_is_the_bytes_moved(n, dtype):
    x, y = seeded(n, seed=1, dtype=dtype), seeded(n, seed=2, dtype=dtype)
    out = torch.empty(n, dtype=dtype, device=device())
    sizes = {"x": x.element_size(), "y": y.element_size(), "out": out.element_size()}
    assert_ledger_traffic(kernel, "axpy", {"n": n}, sizes, bytes_of(x, y, out))
