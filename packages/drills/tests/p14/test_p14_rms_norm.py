"""P14 rms_norm(x, weight, eps) and RMSNorm(dim, eps): fp32 reduction, input dtype out."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from gptlab_testkit import assert_close, assert_rejects, candidate, test_device
from gptlab_testkit.oracles import inputs_untouched, seeded

drill = candidate("DRILL_P14_MODULE")

pytestmark = [pytest.mark.owner("p14"), pytest.mark.contract]


def loop_rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """Row by row in float64: v / sqrt(sum(v_i^2) / D + eps) * w."""
    D = x.shape[-1]
    rows, w = x.double().reshape(-1, D).tolist(), weight.double().tolist()
    out = []
    for v in rows:
        scale = 1.0 / math.sqrt(sum(a * a for a in v) / D + eps)
        out.append([a * scale * b for a, b in zip(v, w, strict=True)])
    return torch.tensor(out, dtype=torch.float64).reshape(x.shape).to(x.device)


@settings(max_examples=20, deadline=None)
@given(
    leading=st.lists(st.integers(1, 3), min_size=0, max_size=3),
    D=st.integers(1, 8),
    eps=st.sampled_from([1e-6, 1e-2, 0.5]),
    seed=st.integers(0, 2**16),
)
def test_any_leading_dims_match_the_loop_oracle(leading, D, eps, seed):
    x, weight = seeded(*leading, D, seed=seed), seeded(D, seed=seed + 1)

    got = drill.rms_norm(x, weight, eps=eps)

    assert got.shape == x.shape and got.dtype == x.dtype
    assert_close(got.double(), loop_rms_norm(x, weight, eps), "rms_norm vs loop oracle")


def test_eps_is_added_inside_the_square_root():
    x, weight = seeded(3, 4, seed=1) * 0.1, seeded(4, seed=2)

    got = drill.rms_norm(x, weight, eps=0.5)

    assert_close(got.double(), loop_rms_norm(x, weight, 0.5), "rms_norm with eps = 0.5")


def test_an_all_zero_row_gives_zeros_beside_ordinary_rows():
    x = seeded(3, 5, seed=3)
    x[1] = 0.0

    got = drill.rms_norm(x, seeded(5, seed=4), eps=1e-6)

    assert torch.isfinite(got).all(), "an all-zero row produced a non-finite value"
    assert torch.equal(got[1], torch.zeros_like(got[1]))
    assert_close(got.double(), loop_rms_norm(x, seeded(5, seed=4), 1e-6), "rows beside it")


@pytest.mark.parametrize(("scale", "eps"), [(1e3, 1e-6), (1e-4, 1e-10)], ids=["large", "tiny"])
def test_fp16_inputs_are_reduced_in_fp32_and_returned_in_fp16(scale, eps):
    # fp16 squares overflow past 256 and flush to zero below ~2e-4: only an fp32 sum survives.
    x = (seeded(2, 3, 16, seed=5) * scale).to(torch.float16)
    weight = seeded(16, seed=6)

    got = drill.rms_norm(x, weight, eps=eps)

    assert got.dtype == torch.float16
    assert torch.isfinite(got).all(), f"fp16 inputs of size ~{scale} gave inf/nan"
    want = loop_rms_norm(x, weight, eps)
    assert_close(got.double(), want, f"fp16 at scale {scale}", atol=1e-2, rtol=1e-2)


def test_bf16_inputs_return_bf16_close_to_the_oracle():
    x, weight = seeded(4, 32, seed=7).to(torch.bfloat16), seeded(32, seed=8).to(torch.bfloat16)

    got = drill.rms_norm(x, weight, eps=1e-6)

    assert got.dtype == torch.bfloat16
    want = loop_rms_norm(x, weight, 1e-6)
    assert_close(got.double(), want, "bf16 rms_norm", atol=3e-2, rtol=3e-2)


def test_inputs_are_not_written():
    x, weight = seeded(2, 6, seed=9), seeded(6, seed=10)

    with inputs_untouched(x=x, weight=weight):
        drill.rms_norm(x, weight, eps=1e-6)


# ---- the module ----


def module(dim: int, eps: float = 1e-6):
    return drill.RMSNorm(dim, eps=eps).to(test_device())


def test_the_module_registers_one_weight_of_ones():
    norm = module(6)

    state = norm.state_dict()
    assert list(state) == ["weight"], f"state dict keys {list(state)}"
    assert torch.equal(state["weight"], torch.ones(6, device=test_device()))
    assert [p.shape for p in norm.parameters()] == [torch.Size([6])]


def test_the_module_applies_its_weight_over_any_leading_dims():
    norm = module(5, eps=1e-3)
    with torch.no_grad():
        norm.weight.copy_(seeded(5, seed=11))
    x = seeded(2, 3, 5, seed=12)

    got = norm(x)

    assert_close(got.double(), loop_rms_norm(x, norm.weight.detach(), 1e-3), "RMSNorm(x)")


def test_a_state_dict_round_trip_keeps_the_output():
    source, target = module(4), module(4)
    with torch.no_grad():
        source.weight.copy_(seeded(4, seed=13))
    x = seeded(3, 4, seed=14)

    target.load_state_dict(source.state_dict(), strict=True)

    assert torch.equal(target(x), source(x))


def test_a_dtype_move_reaches_the_weight():
    norm = module(8).to(torch.float64)
    x = seeded(2, 8, seed=15, dtype=torch.float64)

    assert norm.weight.dtype == torch.float64
    got = norm(x)
    assert got.dtype == torch.float64
    assert_close(got, loop_rms_norm(x, norm.weight.detach(), 1e-6), "float64 RMSNorm")


def test_an_fp32_module_returns_the_input_dtype_for_half_inputs():
    norm = module(8)
    x = seeded(2, 8, seed=16).to(torch.bfloat16)

    assert norm(x).dtype == torch.bfloat16


def test_the_weight_receives_its_gradient():
    norm = module(4, eps=1e-2)
    x = seeded(3, 4, seed=17)

    (norm(x) * seeded(3, 4, seed=18)).sum().backward()

    upstream = seeded(3, 4, seed=18).double()
    want = (loop_rms_norm(x, torch.ones(4), 1e-2) * upstream).sum(0)
    assert norm.weight.grad is not None, "the weight got no gradient"
    assert_close(norm.weight.grad.double(), want, "d(loss)/d(weight)")


# ---- rejection: valid in every respect but one ----


def test_a_weight_of_the_wrong_size_is_rejected():
    x, weight = seeded(2, 6, seed=19), seeded(5, seed=20)

    with inputs_untouched(x=x, weight=weight):
        assert_rejects(lambda: drill.rms_norm(x, weight, eps=1e-6), ValueError, ("weight", "x"))


@pytest.mark.parametrize("eps", [-1e-6, float("nan")], ids=["negative", "nan"])
def test_an_eps_that_is_not_finite_and_positive_is_rejected(eps):
    x, weight = seeded(2, 6, seed=21), seeded(6, seed=22)

    with inputs_untouched(x=x, weight=weight):
        assert_rejects(lambda: drill.rms_norm(x, weight, eps=eps), ValueError, "eps")


def test_integer_inputs_are_rejected():
    x, weight = torch.arange(12, device=test_device()).reshape(2, 6), seeded(6, seed=23)

    assert_rejects(lambda: drill.rms_norm(x, weight, eps=1e-6), (ValueError, TypeError), "x")


@pytest.mark.parametrize("dim", [0, -3])
def test_a_module_of_non_positive_size_is_rejected(dim):
    assert_rejects(lambda: drill.RMSNorm(dim), ValueError, "dim")
