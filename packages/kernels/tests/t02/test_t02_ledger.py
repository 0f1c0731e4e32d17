"""T02 extension: the ledger's grid and traffic formulas against the launches and the bytes
a call must move (`gptlab_kernels.ledger`)."""

from __future__ import annotations

import pytest
import torch

from gptlab_kernels.ledger import bytes_of
from gptlab_kernels.suite import assert_ledger_grid, assert_ledger_traffic, device, seeded
from gptlab_testkit import candidate
from gptlab_testkit.oracles import LaunchedGrids

kernel = candidate("DRILL_T02_MODULE")

pytestmark = [pytest.mark.owner("t02"), pytest.mark.extension]


@pytest.mark.clause("T02.10")
@pytest.mark.parametrize(("M", "N"), [(9, 40), (70, 3)])
def test_the_stated_grid_is_the_launch_grid_of_both_functions(M, N):
    x, bias = seeded(M, N, seed=1), seeded(N, seed=2)
    out, out_t = torch.empty(M, N, device=device()), torch.empty(N, M, device=device())
    names = {"M": M, "N": N}
    with LaunchedGrids() as seen:
        kernel.add_row_bias(x, bias, out)
    assert_ledger_grid(kernel, "add_row_bias", seen.launches, names)
    with LaunchedGrids() as seen:
        kernel.transpose(x, out_t)
    assert_ledger_grid(kernel, "transpose", seen.launches, names)


@pytest.mark.clause("T02.10")
@pytest.mark.parametrize(("M", "N", "dtype"), [(9, 40, torch.float32), (70, 3, torch.float16)])
def test_the_stated_traffic_is_the_bytes_moved_by_both_functions(M, N, dtype):
    x, bias = seeded(M, N, seed=1, dtype=dtype), seeded(N, seed=2, dtype=dtype)
    out = torch.empty(M, N, dtype=dtype, device=device())
    sizes = {"x": x.element_size(), "bias": bias.element_size(), "out": out.element_size()}
    names = {"M": M, "N": N}
    assert_ledger_traffic(kernel, "add_row_bias", names, sizes, bytes_of(x, bias, out))
    assert_ledger_traffic(kernel, "transpose", names, sizes, bytes_of(x, out))
