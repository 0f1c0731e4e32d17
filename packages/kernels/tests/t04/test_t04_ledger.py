"""T04 extension: the ledger's grid and traffic formulas against the launches and the bytes
a call must move (`gptlab_kernels.ledger`)."""

from __future__ import annotations

import pytest
import torch

from gptlab_kernels.ledger import bytes_of
from gptlab_kernels.suite import assert_ledger_grid, assert_ledger_traffic, device, seeded
from gptlab_testkit import candidate
from gptlab_testkit.oracles import LaunchedGrids

kernel = candidate("DRILL_T04_MODULE")

pytestmark = [pytest.mark.owner("t04"), pytest.mark.extension]


def case(M, H, dtype=torch.float32):
    x, residual = seeded(M, H, seed=1, dtype=dtype), seeded(M, H, seed=2, dtype=dtype)
    weight = seeded(H, seed=3, dtype=dtype)
    out, h = (torch.empty(M, H, dtype=dtype, device=device()) for _ in range(2))
    return x, residual, weight, out, h


@pytest.mark.clause("T04.10")
@pytest.mark.parametrize(("M", "H"), [(5, 37), (3, 128)])
def test_the_stated_grid_is_the_launch_grid(M, H):
    x, residual, weight, out, h = case(M, H)
    with LaunchedGrids() as seen:
        kernel.fused_add_rmsnorm(x, residual, weight, 1e-6, out, h)
    assert_ledger_grid(kernel, "fused_add_rmsnorm", seen.launches, {"M": M, "H": H})


@pytest.mark.clause("T04.10")
@pytest.mark.parametrize(("M", "H", "dtype"), [(5, 37, torch.float32), (3, 128, torch.bfloat16)])
def test_the_stated_traffic_is_the_bytes_moved(M, H, dtype):
    buffers = case(M, H, dtype)
    names = ("x", "residual", "weight", "out", "residual_out")
    sizes = {name: t.element_size() for name, t in zip(names, buffers, strict=True)}
    moved = bytes_of(*buffers)
    assert_ledger_traffic(kernel, "fused_add_rmsnorm", {"M": M, "H": H}, sizes, moved)
