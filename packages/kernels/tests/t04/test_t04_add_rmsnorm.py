"""T04 fused_add_rmsnorm(x, residual, weight, eps, out, residual_out): the residual add and
RMSNorm in one pass, one row per program, the sum of squares in fp32, every hidden size."""

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

kernel = candidate("DRILL_T04_MODULE")

pytestmark = [pytest.mark.owner("t04"), pytest.mark.contract]

HIDDEN = (1, 7, 31, 64, 100, 257, 1024)
EPS = 1e-6


def oracle(x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, eps: float,
           dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:  # fmt: skip
    """(out, residual_out): h rounded to the stream's dtype, its statistics in fp32."""
    h = (x.float() + residual.float()).to(dtype)
    hf = h.float()
    out = hf * torch.rsqrt(hf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()
    return out.to(dtype), h


def buffers(x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor
            ) -> tuple[Guarded, Guarded, Guarded, Guarded, Guarded]:  # fmt: skip
    shape, dtype = tuple(x.shape), x.dtype
    return (guarded("x", x), guarded("residual", residual), guarded("weight", weight),
            guarded_output("out", shape, dtype, device()),
            guarded_output("residual_out", shape, dtype, device()))  # fmt: skip


def checked(x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, what: str,
            eps: float = EPS, ulp: float = 1e-5) -> None:  # fmt: skip
    """The candidate's out and residual_out, guards and poison checked, against the oracle."""
    gx, gr, gw, out, h = buffers(x, residual, weight)

    def run() -> torch.Tensor:
        kernel.fused_add_rmsnorm(gx.view, gr.view, gw.view, eps, out.view, h.view)
        return out.view

    run()
    assert_no_store_outside(out, h, gx, gr, gw)
    assert_no_load_outside(run, out.view, [gx, gr, gw], what)
    expected_out, expected_h = oracle(x, residual, weight, eps, x.dtype)
    assert_close(h.view.float(), expected_h.float(), f"{what}: residual_out", rtol=ulp, atol=1e-6)
    # out within two roundings: h's (one step of h may move out by one) and its own
    spread = ulp if x.dtype == torch.float32 else 2 * ulp
    assert_close(out.view.float(), expected_out.float(), f"{what}: out", rtol=spread, atol=spread)


@pytest.mark.clause("T04.1")
def test_the_signature_takes_six_positional_arguments_and_returns_out_and_residual_out():
    x, residual, weight = seeded(3, 16, seed=1), seeded(3, 16, seed=2), seeded(16, seed=3)
    out, residual_out = torch.empty_like(x), torch.empty_like(x)

    assert_binds(kernel.fused_add_rmsnorm, x, residual, weight, EPS, out, residual_out)
    got = kernel.fused_add_rmsnorm(x, residual, weight, EPS, out, residual_out)

    expected_out, expected_h = oracle(x, residual, weight, EPS, x.dtype)
    assert isinstance(got, tuple) and len(got) == 2, "must return (out, residual_out)"
    assert_close(got[0], expected_out, "the returned out", rtol=1e-5, atol=1e-5)
    assert_close(got[1], expected_h, "the returned residual_out", rtol=1e-6, atol=1e-6)
    assert_close(out, expected_out, "out, written in place", rtol=1e-5, atol=1e-5)
    assert_close(residual_out, expected_h, "residual_out, written in place", rtol=1e-6, atol=1e-6)


@pytest.mark.clause("T04.2")
@pytest.mark.parametrize("H", HIDDEN)
def test_rows_of_prime_and_power_of_two_hidden_sizes_match_the_oracle(H):
    checked(seeded(3, H, seed=H), seeded(3, H, seed=H + 1), seeded(H, seed=H + 2), f"H={H}")


@pytest.mark.clause("T04.2")
@pytest.mark.parametrize("H", [7, 100])
def test_eps_is_added_to_the_mean_square_inside_the_root(H):
    # rows of values near 1e-3: mean square 1e-6, so eps = 1e-2 sets the scale.
    x = seeded(4, H, seed=H + 3, scale=1e-3)
    checked(x, torch.zeros_like(x), seeded(H, seed=H + 4), f"tiny rows, H={H}", eps=1e-2)


@pytest.mark.clause("T04.3")
@pytest.mark.parametrize("H", [7, 100, 1024])
def test_fp16_activations_whose_squares_pass_65504_are_normalised_in_fp32(H):
    x = (300.0 + seeded(4, H, seed=H + 5, scale=20)).to(torch.float16)
    residual = seeded(4, H, seed=H + 6, scale=5, dtype=torch.float16)
    weight = seeded(H, seed=H + 7, dtype=torch.float16)

    checked(x, residual, weight, f"fp16 rows near 300, H={H}", ulp=2.0**-10)


@pytest.mark.clause("T04.3")
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_inputs_reduce_in_fp32_and_round_once(dtype):
    H = 257
    x, residual = seeded(5, H, seed=11, dtype=dtype, scale=3), seeded(5, H, seed=12, dtype=dtype)
    # bf16 within one of its steps: the interpreter rounds fp32 to bf16 its own way.
    ulp = 2.0**-10 if dtype == torch.float16 else 2.0**-7
    checked(x, residual, seeded(H, seed=13, dtype=dtype), f"{dtype}", ulp=ulp)


@pytest.mark.clause("T04.4")
@pytest.mark.parametrize("H", [4096, 8191])
def test_hidden_sizes_near_the_register_limit(H):
    checked(seeded(2, H, seed=H), seeded(2, H, seed=H + 1), seeded(H, seed=H + 2), f"H={H}")
