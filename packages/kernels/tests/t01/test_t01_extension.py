"""T01 extension: strided views, fp16/bf16 with fp32 arithmetic, n = 0, rejections, ledger."""

from __future__ import annotations

import pytest
import torch

from gptlab_kernels.guards import assert_no_store_outside, guarded, guarded_output
from gptlab_kernels.suite import device, ledger_gaps, seeded
from gptlab_testkit import assert_close, assert_rejects, candidate

kernel = candidate("DRILL_T01_MODULE")

pytestmark = [pytest.mark.owner("t01"), pytest.mark.extension]

A = 1.75


@pytest.mark.clause("T01.5")
@pytest.mark.parametrize("strides", [(2, 1, 1), (1, 3, 1), (1, 1, 2), (5, 2, 3)])
@pytest.mark.parametrize("n", [31, 300])
def test_strided_views_are_read_and_written_through_their_strides(strides, n):
    x = guarded("x", seeded(n, seed=1), (strides[0],))
    y = guarded("y", seeded(n, seed=2), (strides[1],))
    out = guarded_output("out", (n,), torch.float32, device(), (strides[2],))

    kernel.axpy(A, x.view, y.view, out.view)

    assert_no_store_outside(out, x, y)
    assert_close(out.view, A * x.view + y.view, f"out, strides {strides}", rtol=1e-6, atol=1e-6)


@pytest.mark.clause("T01.6")
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_inputs_are_computed_in_fp32_and_rounded_once(dtype):
    n = 257
    x = guarded("x", seeded(n, seed=3, dtype=dtype, scale=10), None)
    y = guarded("y", seeded(n, seed=4, dtype=dtype, scale=10), None)
    out = guarded_output("out", (n,), dtype, device())

    kernel.axpy(A, x.view, y.view, out.view)

    expected = (A * x.view.float() + y.view.float()).to(dtype)
    assert_no_store_outside(out)
    # fp16 exactly; bf16 within one of its steps (2**-7 relative): Triton's interpreter
    # rounds fp32 to bf16 its own way, not always to nearest even as torch does.
    ulp = 0.0 if dtype == torch.float16 else 2.0**-7
    assert_close(out.view.float(), expected.float(), f"{dtype} out", rtol=ulp, atol=0)


@pytest.mark.clause("T01.6")
def test_an_fp16_intermediate_past_65504_does_not_overflow():
    # a * x = 90000 overflows fp16, a * x + y = 30000 does not: fp32 arithmetic gets it.
    x = guarded("x", torch.full((40,), 300.0, dtype=torch.float16, device=device()))
    y = guarded("y", torch.full((40,), -60000.0, dtype=torch.float16, device=device()))
    out = guarded_output("out", (40,), torch.float16, device())

    kernel.axpy(300.0, x.view, y.view, out.view)

    assert torch.equal(out.view, torch.full_like(out.view, 30000.0)), f"got {out.view[:4]}"


@pytest.mark.clause("T01.6")
def test_a_is_not_rounded_to_fp16():
    # fp16(1.001) = 1.0009765625: 2048 * a - 2048 comes out 2.0 instead of about 2.048.
    x = guarded("x", torch.full((9,), 2048.0, dtype=torch.float16, device=device()))
    y = guarded("y", torch.full((9,), -2048.0, dtype=torch.float16, device=device()))
    out = guarded_output("out", (9,), torch.float16, device())

    kernel.axpy(1.001, x.view, y.view, out.view)

    expected = torch.tensor(1.001 * 2048 - 2048, dtype=torch.float32).to(torch.float16)
    assert torch.equal(out.view, torch.full_like(out.view, float(expected))), f"{out.view[:3]}"


@pytest.mark.clause("T01.7")
def test_zero_length_returns_out_untouched():
    empty = torch.empty(0, device=device())

    got = kernel.axpy(A, empty, empty.clone(), empty.clone())

    assert got.shape == (0,)


@pytest.mark.clause("T01.8")
@pytest.mark.parametrize(
    ("shapes", "name"),
    [(((4, 2), (8,), (8,)), "x"), (((8,), (7,), (8,)), "y"), (((8,), (8,), (9,)), "out")],
)
def test_a_buffer_of_the_wrong_shape_is_rejected_naming_it(shapes, name):
    x, y, out = (torch.zeros(s, device=device()) for s in shapes)

    assert_rejects(lambda: kernel.axpy(A, x, y, out), ValueError, name)


@pytest.mark.clause("T01.9")
def test_the_ledger_fills_its_eight_fields():
    assert not ledger_gaps(getattr(kernel, "LEDGER", None)), "LEDGER lacks fields"
