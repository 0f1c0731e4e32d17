"""T01 axpy(a, x, y, out): out = a * x + y through masked loads and stores, every tail."""

from __future__ import annotations

import pytest
import torch

from gptlab_kernels.guards import (
    Guarded,
    assert_no_load_outside,
    assert_no_store_outside,
    guarded,
    guarded_output,
)
from gptlab_kernels.suite import device, seeded
from gptlab_testkit import assert_close, candidate
from gptlab_testkit.oracles import assert_binds

kernel = candidate("DRILL_T01_MODULE")

pytestmark = [pytest.mark.owner("t01"), pytest.mark.contract]

PRIMES = (1, 7, 31, 257, 4099)
POWERS_OF_TWO = (64, 1024)
A = 1.75


def buffers(n: int, dtype: torch.dtype = torch.float32, strides: tuple[int, int, int] = (1, 1, 1)
            ) -> tuple[Guarded, Guarded, Guarded]:  # fmt: skip
    x = guarded("x", seeded(n, seed=n, dtype=dtype), (strides[0],))
    y = guarded("y", seeded(n, seed=n + 1, dtype=dtype), (strides[1],))
    out = guarded_output("out", (n,), dtype, device(), (strides[2],))
    return x, y, out


def oracle(x: Guarded, y: Guarded, out: Guarded) -> torch.Tensor:
    return (A * x.view.float() + y.view.float()).to(out.view.dtype)


def run_checked(x: Guarded, y: Guarded, out: Guarded, what: str) -> torch.Tensor:
    """The candidate's out, its guards and its poison checked (each failure names a buffer)."""
    x_before, y_before = x.view.clone(), y.view.clone()
    got = kernel.axpy(A, x.view, y.view, out.view)
    assert_no_store_outside(x, y, out)
    assert_no_load_outside(lambda: kernel.axpy(A, x.view, y.view, out.view), out.view, [x, y], what)
    assert torch.equal(x.view, x_before) and torch.equal(y.view, y_before), (
        f"{what}: x or y written"
    )
    return got


@pytest.mark.clause("T01.1")
def test_the_signature_takes_four_positional_arguments_and_returns_out():
    x, y, out = buffers(8)

    assert_binds(kernel.axpy, A, x.view, y.view, out.view)
    got = kernel.axpy(A, x.view, y.view, out.view)

    assert isinstance(got, torch.Tensor) and got.shape == (8,), "axpy must return out"
    assert_close(got, oracle(x, y, out), "the returned tensor")
    assert_close(out.view, oracle(x, y, out), "out, written in place")


@pytest.mark.clause("T01.2")
@pytest.mark.parametrize("n", PRIMES + POWERS_OF_TWO)
def test_every_element_at_prime_and_power_of_two_lengths(n):
    x, y, out = buffers(n)

    run_checked(x, y, out, f"n={n}")

    assert_close(out.view, oracle(x, y, out), f"out at n={n}", rtol=1e-6, atol=1e-6)


@pytest.mark.clause("T01.2")
@pytest.mark.parametrize("n", [7, 4099])
def test_the_last_blocks_tail_reads_nothing_past_x_or_y(n):
    x, y, out = buffers(n)

    kernel.axpy(A, x.view, y.view, out.view)

    assert_no_load_outside(lambda: kernel.axpy(A, x.view, y.view, out.view), out.view, [x, y],
                           f"n={n}")  # fmt: skip
    assert_close(out.view, oracle(x, y, out), f"out at n={n}", rtol=1e-6, atol=1e-6)


@pytest.mark.clause("T01.4")
@pytest.mark.parametrize("n", [1, 31, 1024, 4099])
def test_nothing_outside_out_is_written(n):
    x, y, out = buffers(n)

    kernel.axpy(A, x.view, y.view, out.view)

    assert_no_store_outside(out, x, y)
    assert not bool((out.view == out.initial.view(out.view.dtype)[0]).any()), "out not all written"
