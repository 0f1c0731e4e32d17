"""T03 softmax(x, out): one row per program, -inf padding for the max, 0 in the sum, stable."""

from __future__ import annotations

import pytest
import torch

from gptlab_kernels.guards import (
    assert_no_load_outside,
    assert_no_store_outside,
    guarded,
    guarded_output,
)
from gptlab_kernels.suite import device, seeded
from gptlab_testkit import assert_close, candidate
from gptlab_testkit.oracles import assert_binds

kernel = candidate("DRILL_T03_MODULE")

pytestmark = [pytest.mark.owner("t03"), pytest.mark.contract]

ROW_LENGTHS = (1, 2, 7, 31, 64, 100, 257, 1024)


def checked(values: torch.Tensor, what: str, x_stride=None, out_stride=None) -> torch.Tensor:
    """The candidate's softmax of `values`, guards and poison checked, against torch's."""
    x = guarded("x", values, x_stride)
    out = guarded_output("out", tuple(values.shape), values.dtype, device(), out_stride)
    kernel.softmax(x.view, out.view)
    assert_no_store_outside(out, x)
    assert_no_load_outside(lambda: kernel.softmax(x.view, out.view), out.view, [x], what)
    expected = torch.softmax(values.float(), -1)
    assert_close(out.view.float(), expected, what, rtol=1e-5, atol=1e-5)
    sums = out.view.float().sum(-1)
    assert_close(sums, torch.ones_like(sums), f"{what}: row sums", rtol=0, atol=1e-5)
    return out.view


@pytest.mark.clause("T03.1")
def test_the_signature_takes_x_and_out_positionally_and_returns_out():
    x = seeded(3, 10, seed=1)
    out = torch.empty_like(x)

    assert_binds(kernel.softmax, x, out)
    got = kernel.softmax(x, out)

    assert_close(got, torch.softmax(x, -1), "returned value", rtol=1e-5, atol=1e-5)
    assert_close(out, torch.softmax(x, -1), "out, written in place", rtol=1e-5, atol=1e-5)


@pytest.mark.clause("T03.2")
@pytest.mark.parametrize("N", ROW_LENGTHS)
def test_rows_of_prime_and_power_of_two_lengths_match_torch_softmax(N):
    checked(seeded(5, N, seed=N, scale=3), f"[5, {N}]")


@pytest.mark.clause("T03.3")
@pytest.mark.parametrize("N", [7, 100, 257])
def test_rows_far_below_zero_are_right_so_padded_lanes_are_minus_inf(N):
    values = seeded(4, N, seed=N + 1) - 1000.0

    checked(values, f"rows near -1000, N={N}")


@pytest.mark.clause("T03.3")
@pytest.mark.parametrize("N", [31, 100])
def test_no_load_past_a_row_reaches_the_result(N):
    values = seeded(3, N, seed=N + 2)
    x = guarded("x", values)
    out = guarded_output("out", (3, N), torch.float32, device())

    kernel.softmax(x.view, out.view)

    assert_no_load_outside(lambda: kernel.softmax(x.view, out.view), out.view, [x], f"N={N}")


@pytest.mark.clause("T03.4")
@pytest.mark.parametrize("N", [2, 64, 100])
def test_rows_near_plus_1000_stay_finite_so_the_max_is_subtracted(N):
    values = seeded(4, N, seed=N + 3) + 1000.0

    checked(values, f"rows near +1000, N={N}")
