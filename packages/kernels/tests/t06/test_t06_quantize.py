"""T06 quantize_per_token(x, q, scales) and dequantize_per_token(q, scales, out): max-abs,
one fp32 scale per row, int8 storage, dequant; all-zero rows and padded head dims.

A max ignores NaN under Triton's interpreter, so x's guards hold +inf here: a load past a
row makes that row's scale infinite."""

from __future__ import annotations

import pytest
import torch

from gptlab_kernels.guards import (
    Guarded,
    assert_no_load_outside,
    assert_no_store_outside,
    canary_for,
    guarded,
    guarded_output,
)
from gptlab_kernels.suite import device, seeded
from gptlab_testkit import assert_close, candidate
from gptlab_testkit.oracles import assert_binds

kernel = candidate("DRILL_T06_MODULE")

pytestmark = [pytest.mark.owner("t06"), pytest.mark.contract]

INF = float("inf")
HEAD_DIMS = (1, 7, 64, 80, 96, 100, 128, 257)


def oracle(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(q, scales): scale = max|x| / 127 (1.0 for a zero row), q = x / scale to nearest even."""
    amax = x.float().abs().amax(-1)
    scales = torch.where(amax > 0, amax / 127, torch.ones_like(amax))
    return torch.round(x.float() / scales[:, None]).to(torch.int8), scales


def quantized(values: torch.Tensor, what: str) -> tuple[Guarded, Guarded, Guarded]:
    """The candidate's q and scales, guards and poison checked (each failure names a buffer)."""
    M, D = values.shape
    x = guarded("x", values, fill=INF)
    q = guarded_output("q", (M, D), torch.int8, device())
    scales = guarded_output("scales", (M,), torch.float32, device())

    def run() -> torch.Tensor:
        kernel.quantize_per_token(x.view, q.view, scales.view)
        return scales.view

    run()
    assert_no_store_outside(q, scales, x)
    assert_no_load_outside(run, scales.view, [x], what, poison=INF)
    assert not bool((q.view == canary_for(torch.int8)).any()), f"{what}: q not all written"
    return x, q, scales


def dequantized(q: torch.Tensor, scales: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    gq, gs = guarded("q", q, fill=0), guarded("scales", scales)
    out = guarded_output("out", tuple(q.shape), dtype, device())
    kernel.dequantize_per_token(gq.view, gs.view, out.view)
    assert_no_store_outside(out, gq, gs)
    return out.view


@pytest.mark.clause("T06.1")
def test_the_signatures_take_their_buffers_positionally_and_return_them():
    x = seeded(3, 16, seed=1)
    q, scales = torch.empty(3, 16, dtype=torch.int8), torch.empty(3)
    q, scales = q.to(device()), scales.to(device())
    out = torch.empty(3, 16, device=device())

    assert_binds(kernel.quantize_per_token, x, q, scales)
    got = kernel.quantize_per_token(x, q, scales)
    assert_binds(kernel.dequantize_per_token, q, scales, out)
    back = kernel.dequantize_per_token(q, scales, out)

    expected_q, expected_scales = oracle(x)
    assert isinstance(got, tuple) and len(got) == 2, "quantize must return (q, scales)"
    assert torch.equal(got[0], expected_q) and torch.equal(q, expected_q), "q, in place"
    assert_close(got[1], expected_scales, "the returned scales", rtol=1e-6, atol=0)
    assert back is out or torch.equal(back, out), "dequantize must return out"


@pytest.mark.clause("T06.2")
@pytest.mark.parametrize("D", HEAD_DIMS)
def test_max_abs_scale_and_rounding_at_prime_power_of_two_and_head_dims(D):
    values = seeded(6, D, seed=D, scale=3)

    _, q, scales = quantized(values, f"D={D}")

    expected_q, expected_scales = oracle(values)
    assert_close(scales.view, expected_scales, f"scales, D={D}", rtol=1e-6, atol=0)
    assert torch.equal(q.view, expected_q), f"q, D={D}: {(q.view != expected_q).sum()} differ"
    assert bool((q.view.abs().amax(-1) == 127).all()), "each row's max-abs must map to +-127"


@pytest.mark.clause("T06.3")
@pytest.mark.parametrize("D", [7, 80, 96, 100])
def test_padded_head_dims_count_no_padded_lane_in_the_max(D):
    # every value negative and small: a padded lane read as anything but 0 wins the max-abs,
    # or the neighbouring row (10x larger) does
    values = -(seeded(4, D, seed=D + 1).abs() + 0.01)
    values[1::2] *= 10

    _, q, scales = quantized(values, f"padded D={D}")

    assert_close(scales.view, oracle(values)[1], f"scales, D={D}", rtol=1e-6, atol=0)
    assert torch.equal(q.view, oracle(values)[0]), f"q, D={D}"


@pytest.mark.clause("T06.4")
@pytest.mark.parametrize("D", [7, 64])
def test_an_all_zero_row_has_scale_one_and_comes_back_zero(D):
    values = seeded(5, D, seed=D + 2)
    values[1] = 0
    values[4] = 0

    _, q, scales = quantized(values, f"zero rows, D={D}")

    assert scales.view[1] == 1.0 and scales.view[4] == 1.0, f"zero rows' scales {scales.view}"
    assert not bool(q.view[1].any() or q.view[4].any()), "zero rows must quantize to 0"
    back = dequantized(q.view, scales.view, torch.float32)
    assert torch.equal(back[1], values[1]) and torch.equal(back[4], values[4]), "zero rows back"
    assert_close(scales.view, oracle(values)[1], "the other rows' scales", rtol=1e-6, atol=0)


@pytest.mark.clause("T06.5")
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("D", [1, 7, 96])
def test_dequant_is_q_times_scale_within_half_a_step_of_x(dtype, D):
    values = seeded(5, D, seed=D + 3, scale=2, dtype=dtype)

    _, q, scales = quantized(values, f"{dtype}, D={D}")
    back = dequantized(q.view, scales.view, dtype)

    expected = (q.view.float() * scales.view[:, None]).to(dtype)
    # exact for fp32 and fp16; bf16 within one step (the interpreter rounds to bf16 its own way)
    ulp = 2.0**-7 if dtype == torch.bfloat16 else 0.0
    assert_close(back.float(), expected.float(), f"dequant {dtype}", rtol=ulp, atol=0)
    error = (back.float() - values.float()).abs()
    rounding = values.float().abs() * (ulp or 2.0**-11)
    assert bool((error <= scales.view[:, None] / 2 + rounding + 1e-7).all()), (
        f"{dtype}: an element came back further than scale / 2 from x"
    )
