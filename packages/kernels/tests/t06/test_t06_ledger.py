"""T06 extension: the ledger's grid and traffic formulas against the launches and the bytes
a call must move (`gptlab_kernels.ledger`)."""

from __future__ import annotations

import pytest
import torch

from gptlab_kernels.ledger import bytes_of
from gptlab_kernels.suite import assert_ledger_grid, assert_ledger_traffic, device, seeded
from gptlab_testkit import candidate
from gptlab_testkit.oracles import LaunchedGrids

kernel = candidate("DRILL_T06_MODULE")

pytestmark = [pytest.mark.owner("t06"), pytest.mark.extension]


def buffers(M, D, dtype=torch.float32):
    x = seeded(M, D, seed=1, dtype=dtype)
    q = torch.empty(M, D, dtype=torch.int8, device=device())
    scales = torch.empty(M, dtype=torch.float32, device=device())
    return x, q, scales, torch.empty(M, D, dtype=dtype, device=device())


@pytest.mark.clause("T06.10")
@pytest.mark.parametrize(("M", "D"), [(5, 80), (3, 7)])
def test_the_stated_grids_are_the_launch_grids_of_both_functions(M, D):
    x, q, scales, out = buffers(M, D)
    names = {"M": M, "D": D}
    with LaunchedGrids() as seen:
        kernel.quantize_per_token(x, q, scales)
    assert_ledger_grid(kernel, "quantize_per_token", seen.launches, names)
    with LaunchedGrids() as seen:
        kernel.dequantize_per_token(q, scales, out)
    assert_ledger_grid(kernel, "dequantize_per_token", seen.launches, names)


@pytest.mark.clause("T06.10")
@pytest.mark.parametrize(("M", "D", "dtype"), [(5, 80, torch.float32), (3, 7, torch.float16)])
def test_the_stated_traffic_is_the_bytes_moved_by_both_functions(M, D, dtype):
    x, q, scales, out = buffers(M, D, dtype)
    sizes = {"x": x.element_size(), "q": 1, "scales": 4, "out": out.element_size()}
    names = {"M": M, "D": D}
    moved = bytes_of(x, q, scales)
    assert_ledger_traffic(kernel, "quantize_per_token", names, sizes, moved)
    moved = bytes_of(q, scales, out)
    assert_ledger_traffic(kernel, "dequantize_per_token", names, sizes, moved)
