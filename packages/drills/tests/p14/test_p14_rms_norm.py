"""P14 rms_norm(x, weight, eps) and RMSNorm(dim, eps): fp32 reduction, input dtype out."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from gptlab_testkit import (
    assert_close,
    candidate,
    shares_storage,
    test_device,
)
from gptlab_testkit.oracles import assert_binds, inputs_untouched, seeded

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


@pytest.mark.clause("P14.2", "P14.3", "P14.4")
@settings(max_examples=20, deadline=None)
@given(
    leading=st.lists(st.integers(1, 3), min_size=0, max_size=3),
    D=st.integers(1, 8),
    eps=st.sampled_from([1e-6, 1e-2, 0.5]),
    seed=st.integers(0, 2**16),
)
def test_any_leading_dims_match_the_loop_oracle(leading, D, eps, seed):
    x, weight = seeded(*leading, D, seed=seed), seeded(D, seed=seed + 1)

    # the oracle first: the call's writes cannot reach it
    want = loop_rms_norm(x, weight, eps)
    got = drill.rms_norm(x, weight, eps=eps)

    assert got.shape == x.shape and got.dtype == x.dtype
    assert_close(got.double(), want, "rms_norm vs loop oracle")


@pytest.mark.clause("P14.4")
def test_eps_is_added_inside_the_square_root():
    x, weight = seeded(3, 4, seed=1) * 0.1, seeded(4, seed=2)

    # the oracle first: the call's writes cannot reach it
    want = loop_rms_norm(x, weight, 0.5)
    got = drill.rms_norm(x, weight, eps=0.5)

    assert_close(got.double(), want, "rms_norm with eps = 0.5")


@pytest.mark.clause("P14.4")
def test_an_all_zero_row_gives_zeros_beside_ordinary_rows():
    x = seeded(3, 5, seed=3)
    x[1] = 0.0

    # the oracle first: the call's writes cannot reach it
    want = loop_rms_norm(x, seeded(5, seed=4), 1e-6)
    got = drill.rms_norm(x, seeded(5, seed=4), eps=1e-6)

    assert torch.isfinite(got).all(), "an all-zero row produced a non-finite value"
    assert torch.equal(got[1], torch.zeros_like(got[1]))
    assert_close(got.double(), want, "rows beside it")


@pytest.mark.clause("P14.3", "P14.6")
@pytest.mark.parametrize(("scale", "eps"), [(1e3, 1e-6), (1e-4, 1e-10)], ids=["large", "tiny"])
def test_fp16_inputs_are_reduced_in_fp32_and_returned_in_fp16(scale, eps):
    # fp16 squares overflow past 256 and flush to zero below ~2e-4: only an fp32 sum survives.
    x = (seeded(2, 3, 16, seed=5) * scale).to(torch.float16)
    weight = seeded(16, seed=6)

    # the oracle first: the call's writes cannot reach it
    want = loop_rms_norm(x, weight, eps)
    got = drill.rms_norm(x, weight, eps=eps)

    assert got.dtype == torch.float16
    assert torch.isfinite(got).all(), f"fp16 inputs of size ~{scale} gave inf/nan"
    assert_close(got.double(), want, f"fp16 at scale {scale}", atol=1e-2, rtol=1e-2)


@pytest.mark.clause("P14.3", "P14.6")
def test_bf16_inputs_return_bf16_close_to_the_oracle():
    x, weight = seeded(4, 32, seed=7).to(torch.bfloat16), seeded(32, seed=8).to(torch.bfloat16)

    # the oracle first: the call's writes cannot reach it
    want = loop_rms_norm(x, weight, 1e-6)
    got = drill.rms_norm(x, weight, eps=1e-6)

    assert got.dtype == torch.bfloat16
    assert_close(got.double(), want, "bf16 rms_norm", atol=3e-2, rtol=3e-2)


@pytest.mark.clause("P14.9")
def test_inputs_are_not_written():
    x, weight = seeded(2, 6, seed=9), seeded(6, seed=10)

    with inputs_untouched(x=x, weight=weight):
        drill.rms_norm(x, weight, eps=1e-6)


# ---- the module ----


def module(dim: int, eps: float = 1e-6):
    return drill.RMSNorm(dim, eps=eps).to(test_device())


@pytest.mark.clause("P14.7", "P14.8")
def test_the_module_registers_one_weight_of_ones():
    norm = module(6)

    state = norm.state_dict()
    assert list(state) == ["weight"], f"state dict keys {list(state)}"
    assert torch.equal(state["weight"], torch.ones(6, device=test_device()))
    assert [p.shape for p in norm.parameters()] == [torch.Size([6])]


@pytest.mark.clause("P14.2", "P14.7")
def test_the_module_applies_its_weight_over_any_leading_dims():
    norm = module(5, eps=1e-3)
    with torch.no_grad():
        norm.weight.copy_(seeded(5, seed=11))
    x = seeded(2, 3, 5, seed=12)

    # the oracle first: the call's writes cannot reach it
    want = loop_rms_norm(x, norm.weight.detach(), 1e-3)
    got = norm(x)

    assert_close(got.double(), want, "RMSNorm(x)")


@pytest.mark.clause("P14.8")
def test_a_state_dict_round_trip_keeps_the_output():
    source, target = module(4), module(4)
    with torch.no_grad():
        source.weight.copy_(seeded(4, seed=13))
    x = seeded(3, 4, seed=14)

    target.load_state_dict(source.state_dict(), strict=True)

    assert torch.equal(target(x), source(x))


@pytest.mark.clause("P14.8")
def test_a_dtype_move_reaches_the_weight():
    norm = module(8).to(torch.float64)
    x = seeded(2, 8, seed=15, dtype=torch.float64)

    assert norm.weight.dtype == torch.float64
    got = norm(x)
    assert got.dtype == torch.float64
    assert_close(got, loop_rms_norm(x, norm.weight.detach(), 1e-6), "float64 RMSNorm")


@pytest.mark.clause("P14.3")
def test_an_fp32_module_returns_the_input_dtype_for_half_inputs():
    norm = module(8)
    x = seeded(2, 8, seed=16).to(torch.bfloat16)

    assert norm(x).dtype == torch.bfloat16


@pytest.mark.clause("P14.8")
def test_the_weight_receives_its_gradient():
    norm = module(4, eps=1e-2)
    x = seeded(3, 4, seed=17)

    (norm(x) * seeded(3, 4, seed=18)).sum().backward()

    upstream = seeded(3, 4, seed=18).double()
    want = (loop_rms_norm(x, torch.ones(4), 1e-2) * upstream).sum(0)
    assert norm.weight.grad is not None, "the weight got no gradient"
    assert_close(norm.weight.grad.double(), want, "d(loss)/d(weight)")


@pytest.mark.clause("P14.1")
def test_the_signatures_take_the_documented_arguments():
    x, weight = seeded(2, 4, seed=30), seeded(4, seed=31)

    assert_binds(drill.rms_norm, x, weight)
    assert_binds(drill.rms_norm, x, weight, eps=1e-3)
    assert_binds(drill.RMSNorm, 4)
    assert_binds(drill.RMSNorm, 4, eps=1e-3)
    assert_close(drill.rms_norm(x, weight, eps=1e-3).double(), loop_rms_norm(x, weight, 1e-3))


@pytest.mark.clause("P14.5")
def test_eps_defaults_to_one_in_a_million_in_the_function():
    x, weight = seeded(3, 4, seed=32) * 1e-3, seeded(4, seed=33)  # mean square ~1e-6: eps shows

    # the oracle first: the call's writes cannot reach it
    want = loop_rms_norm(x, weight, 1e-6)
    got = drill.rms_norm(x, weight)

    assert_close(got.double(), want, "rms_norm without eps")


@pytest.mark.clause("P14.5", "P14.7")
def test_eps_defaults_to_one_in_a_million_in_the_module():
    norm = drill.RMSNorm(4).to(test_device())
    x = seeded(3, 4, seed=34) * 1e-3

    # the oracle first: the call's writes cannot reach it
    want = loop_rms_norm(x, torch.ones(4), 1e-6)
    got = norm(x)

    assert_close(got.double(), want, "RMSNorm(4)(x)")


@pytest.mark.clause("P14.2", "P14.3", "P14.4")
@pytest.mark.parametrize("shape", [(6,), (2, 1, 3, 6)], ids=str)
def test_no_or_many_leading_dims_keep_their_shape(shape):
    x, weight = seeded(*shape, seed=35), seeded(6, seed=36)

    # the oracle first: the call's writes cannot reach it
    want = loop_rms_norm(x, weight, 1e-5)
    got = drill.rms_norm(x, weight, eps=1e-5)

    assert got.shape == x.shape and got.dtype == x.dtype
    assert_close(got.double(), want, f"rms_norm of {shape}")


@pytest.mark.clause("P14.3", "P14.4")
def test_float64_stays_float64_and_an_fp32_weight_does_not_narrow_it():
    x, weight = seeded(3, 5, seed=37, dtype=torch.float64), seeded(5, seed=38)

    # the oracle first: the call's writes cannot reach it
    want = loop_rms_norm(x, weight, 1e-6)
    got = drill.rms_norm(x, weight, eps=1e-6)

    assert got.dtype == torch.float64
    assert_close(got, want, "float64 rms_norm", atol=1e-6, rtol=1e-6)


@pytest.mark.clause("P14.4")
def test_no_mean_is_subtracted():
    x = seeded(2, 6, seed=39) + 5.0  # a large mean: LayerNorm's centring would remove it
    weight = torch.ones(6, device=test_device())

    got = drill.rms_norm(x, weight, eps=1e-6)

    assert (got > 0).all(), "centred output: a mean was subtracted"
    assert_close(got.double(), loop_rms_norm(x, weight, 1e-6), "shifted rows")


@pytest.mark.clause("P14.7")
def test_the_module_uses_the_eps_it_was_built_with():
    norm = drill.RMSNorm(4, eps=0.5).to(test_device())
    x = seeded(3, 4, seed=40) * 0.1

    # the oracle first: the call's writes cannot reach it
    want = loop_rms_norm(x, torch.ones(4), 0.5)
    got = norm(x)

    assert_close(got.double(), want, "RMSNorm(4, eps=0.5)")


@pytest.mark.clause("P14.9")
def test_the_output_is_a_new_tensor():
    x, weight = seeded(2, 6, seed=41), torch.ones(6, device=test_device())

    got = drill.rms_norm(x, weight, eps=1e-6)

    assert not shares_storage(got, x) and not shares_storage(got, weight)


@pytest.mark.clause("P14.7")
def test_a_module_of_one_channel_normalises_each_value_to_its_sign():
    norm = drill.RMSNorm(1, eps=1e-6).to(test_device())
    x = torch.tensor([[3.0], [-0.5], [0.0]], device=test_device())

    # the oracle first: the call's writes cannot reach it
    want = loop_rms_norm(x, torch.ones(1), 1e-6)
    got = norm(x)

    assert_close(got.double(), want, "RMSNorm(1)(x)")
