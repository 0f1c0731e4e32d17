"""T06 extension: every buffer through its own strides, empty batches, rejections, ledger."""

from __future__ import annotations

import pytest
import torch

from gptlab_kernels.guards import assert_no_store_outside, guarded, guarded_output
from gptlab_kernels.suite import device, ledger_gaps, seeded
from gptlab_testkit import assert_close, assert_rejects, candidate

kernel = candidate("DRILL_T06_MODULE")

pytestmark = [pytest.mark.owner("t06"), pytest.mark.extension]


def oracle(x):
    amax = x.float().abs().amax(-1)
    scales = torch.where(amax > 0, amax / 127, torch.ones_like(amax))
    return torch.round(x.float() / scales[:, None]).to(torch.int8), scales


@pytest.mark.clause("T06.7")
def test_each_buffer_is_read_and_written_through_its_own_strides():
    M, D = 6, 40  # seven distinct strides in quantize, seven in dequantize
    x = guarded("x", seeded(M, D, seed=1), (1, 9))
    q = guarded_output("q", (M, D), torch.int8, device(), (87, 2))
    scales = guarded_output("scales", (M,), torch.float32, device(), (3,))

    kernel.quantize_per_token(x.view, q.view, scales.view)

    assert_no_store_outside(q, scales, x)
    expected_q, expected_scales = oracle(x.view)
    assert torch.equal(q.view, expected_q), "q through its strides"
    assert_close(scales.view, expected_scales, "scales through its stride", rtol=1e-6, atol=0)
    out = guarded_output("out", (M, D), torch.float32, device(), (5, 31))
    kernel.dequantize_per_token(q.view, scales.view, out.view)
    assert_no_store_outside(out)
    assert_close(out.view, expected_q.float() * expected_scales[:, None], "dequant", rtol=0, atol=0)


@pytest.mark.clause("T06.8")
def test_no_rows_return_the_buffers_untouched():
    x = torch.zeros(0, 8, device=device())
    q, scales = torch.zeros(0, 8, dtype=torch.int8), torch.zeros(0)

    got = kernel.quantize_per_token(x, q.to(device()), scales.to(device()))
    back = kernel.dequantize_per_token(got[0], got[1], torch.zeros(0, 8, device=device()))

    assert got[0].shape == (0, 8) and back.shape == (0, 8)


@pytest.mark.clause("T06.8")
@pytest.mark.parametrize(
    ("x", "q", "scales", "name"),
    [
        ((4,), ((4,), torch.int8), ((1,), torch.float32), "x"),
        ((2, 3), ((2, 3), torch.float32), ((2,), torch.float32), "q"),
        ((2, 3), ((2, 4), torch.int8), ((2,), torch.float32), "q"),
        ((2, 3), ((2, 3), torch.int8), ((3,), torch.float32), "scales"),
        ((2, 3), ((2, 3), torch.int8), ((2,), torch.float16), "scales"),
    ],
)
def test_quantize_rejects_buffers_that_do_not_fit_naming_them(x, q, scales, name):
    tx = torch.zeros(x, device=device())
    tq = torch.zeros(q[0], dtype=q[1], device=device())
    ts = torch.zeros(scales[0], dtype=scales[1], device=device())

    assert_rejects(lambda: kernel.quantize_per_token(tx, tq, ts), ValueError, name)


@pytest.mark.clause("T06.8")
@pytest.mark.parametrize(
    ("q", "scales", "out", "name"),
    [
        (((2, 3), torch.float32), (2,), (2, 3), "q"),
        (((2, 3), torch.int8), (3,), (2, 3), "scales"),
        (((2, 3), torch.int8), (2,), (3, 2), "out"),
    ],
)
def test_dequantize_rejects_buffers_that_do_not_fit_naming_them(q, scales, out, name):
    tq = torch.zeros(q[0], dtype=q[1], device=device())
    ts, to = torch.ones(scales, device=device()), torch.zeros(out, device=device())

    assert_rejects(lambda: kernel.dequantize_per_token(tq, ts, to), ValueError, name)


@pytest.mark.clause("T06.9")
def test_the_ledger_fills_its_eight_fields():
    assert not ledger_gaps(getattr(kernel, "LEDGER", None)), "LEDGER lacks fields"
