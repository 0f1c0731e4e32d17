"""T04 extension: every buffer through its own strides, the stream updated in place,
rejections, ledger."""

from __future__ import annotations

import pytest
import torch

from gptlab_kernels.guards import assert_no_store_outside, guarded, guarded_output
from gptlab_kernels.suite import device, ledger_gaps, seeded
from gptlab_testkit import assert_close, assert_rejects, candidate

kernel = candidate("DRILL_T04_MODULE")

pytestmark = [pytest.mark.owner("t04"), pytest.mark.extension]

EPS = 1e-6


def oracle(x, residual, weight, eps=EPS):
    h = x.float() + residual.float()
    return h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps) * weight.float(), h


@pytest.mark.clause("T04.6")
def test_each_buffer_is_read_and_written_through_its_own_strides():
    M, H = 5, 37  # nine distinct strides: a swapped pair shows
    x = guarded("x", seeded(M, H, seed=1), (80, 2))
    residual = guarded("residual", seeded(M, H, seed=2), (1, 6))
    weight = guarded("weight", seeded(H, seed=3), (4,))
    out = guarded_output("out", (M, H), torch.float32, device(), (3, 17))
    h = guarded_output("residual_out", (M, H), torch.float32, device(), (190, 5))

    kernel.fused_add_rmsnorm(x.view, residual.view, weight.view, EPS, out.view, h.view)

    assert_no_store_outside(out, h, x, residual, weight)
    expected_out, expected_h = oracle(x.view, residual.view, weight.view)
    assert_close(h.view, expected_h, "residual_out", rtol=1e-6, atol=1e-6)
    assert_close(out.view, expected_out, "out", rtol=1e-5, atol=1e-5)


@pytest.mark.clause("T04.7")
@pytest.mark.parametrize("into", ["residual", "x"])
def test_residual_out_may_be_the_residual_or_x_itself(into):
    x, residual, weight = seeded(4, 50, seed=4), seeded(4, 50, seed=5), seeded(50, seed=6)
    expected_out, expected_h = oracle(x, residual, weight)
    out = torch.empty_like(x)
    stream = residual if into == "residual" else x

    kernel.fused_add_rmsnorm(x, residual, weight, EPS, out, stream)

    assert_close(stream, expected_h, f"the stream updated in place ({into})", rtol=1e-6, atol=1e-6)
    assert_close(out, expected_out, "out", rtol=1e-5, atol=1e-5)


@pytest.mark.clause("T04.8")
@pytest.mark.parametrize(
    ("shapes", "eps", "name"),
    [
        (((3,), (3,), (3,), (3,), (3,)), EPS, "x"),
        (((2, 3), (2, 4), (3,), (2, 3), (2, 3)), EPS, "residual"),
        (((2, 3), (2, 3), (4,), (2, 3), (2, 3)), EPS, "weight"),
        (((2, 3), (2, 3), (3,), (3, 2), (2, 3)), EPS, "out"),
        (((2, 3), (2, 3), (3,), (2, 3), (2, 2)), EPS, "residual_out"),
        (((2, 3), (2, 3), (3,), (2, 3), (2, 3)), 0.0, "eps"),
    ],
)
def test_arguments_that_do_not_fit_are_rejected_naming_them(shapes, eps, name):
    x, residual, weight, out, h = (torch.zeros(s, device=device()) for s in shapes)

    assert_rejects(lambda: kernel.fused_add_rmsnorm(x, residual, weight, eps, out, h),
                   ValueError, name)  # fmt: skip


@pytest.mark.clause("T04.8")
def test_no_rows_returns_the_buffers_untouched():
    x = torch.zeros(0, 8, device=device())

    got = kernel.fused_add_rmsnorm(
        x, x.clone(), torch.ones(8, device=device()), EPS, x.clone(), x.clone()
    )

    assert len(got) == 2 and got[0].shape == (0, 8)


@pytest.mark.clause("T04.9")
def test_the_ledger_fills_its_eight_fields():
    assert not ledger_gaps(getattr(kernel, "LEDGER", None)), "LEDGER lacks fields"
