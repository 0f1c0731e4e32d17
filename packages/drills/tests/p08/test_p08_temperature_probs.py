"""P08 temperature_probs(logits, temperature): fp32 softmax(logits / T), greedy at T = 0."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from gptlab_testkit import (
    assert_close,
    assert_rejects,
    boundary_settings,
    candidate,
    shares_storage,
    test_device,
)
from gptlab_testkit.oracles import assert_binds, inputs_untouched, seeded

drill = candidate("DRILL_P08_MODULE")

pytestmark = [pytest.mark.owner("p08"), pytest.mark.contract]


def loop_probs(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """The oracle in float64, one row at a time, from the logits' exact values."""
    out = []
    for row in logits.double().tolist():
        top = max(row)
        weights = [math.exp((x - top) / temperature) for x in row]
        out.append([w / sum(weights) for w in weights])
    return torch.tensor(out, dtype=torch.float64, device=logits.device)


def probs(logits, temperature) -> torch.Tensor:
    got = drill.temperature_probs(logits, temperature)
    assert got.shape == logits.shape, f"shape {tuple(got.shape)} != {tuple(logits.shape)}"
    assert got.dtype == torch.float32, f"probabilities must be fp32, got {got.dtype}"
    return got


@pytest.mark.clause("P08.2", "P08.3", "P08.4")
@pytest.mark.parametrize("temperature", [0.5, 1.0, 2.0])
def test_probs_equal_the_loop_softmax_of_the_tempered_logits(temperature):
    logits = seeded(3, 7, seed=1) * 3

    # the oracle first: the call's writes cannot reach it
    want = loop_probs(logits, temperature)
    got = probs(logits, temperature)

    assert_close(got.double(), want, f"T={temperature}", atol=1e-6)


@boundary_settings(20)
@given(
    shape=st.tuples(st.integers(1, 4), st.integers(1, 10)),
    scale=st.sampled_from([1.0, 30.0, 1e3]),
    temperature=st.sampled_from([0.05, 0.7, 1.0, 4.0]),
    seed=st.integers(0, 2**16),
)
@pytest.mark.clause("P08.4", "P08.5")
def test_every_row_sums_to_one_with_finite_entries(shape, scale, temperature, seed):
    logits = seeded(*shape, seed=seed) * scale

    got = probs(logits, temperature)

    assert torch.isfinite(got).all(), f"non-finite probabilities: {got}"
    assert_close(got.sum(-1).double(), torch.ones(shape[0], dtype=torch.float64,
                 device=got.device), "row sums", atol=1e-5)  # fmt: skip


@pytest.mark.clause("P08.3", "P08.5")
def test_large_half_precision_logits_give_finite_fp32_probabilities():
    logits = torch.tensor(
        [[6.0e4, 5.99e4, -6.0e4, 0.0], [-3.0e4, -3.001e4, -6.5e4, -2.9e4]],
        dtype=torch.float16,
        device=test_device(),
    )

    # the oracle first: the call's writes cannot reach it
    want = loop_probs(logits, 0.5)
    got = probs(logits, 0.5)  # logits / 0.5 overflow fp16; an fp16 softmax is 3 digits short

    assert torch.isfinite(got).all(), f"non-finite probabilities: {got}"
    assert_close(got.double(), want, "fp16 logits at T=0.5", atol=1e-6)


@pytest.mark.clause("P08.3", "P08.4")
def test_bfloat16_logits_are_normalised_in_fp32():
    logits = (seeded(2, 6, seed=2) * 4).to(torch.bfloat16)

    # the oracle first: the call's writes cannot reach it
    want = loop_probs(logits, 1.0)
    got = probs(logits, 1.0)

    assert_close(got.double(), want, "bf16 logits", atol=1e-6)


@pytest.mark.clause("P08.5")
def test_adding_a_constant_to_a_row_changes_nothing():
    logits = seeded(3, 6, seed=3)
    shifted = logits + torch.tensor([[200.0], [-300.0], [0.0]], device=test_device())

    assert_close(probs(shifted, 0.7), probs(logits, 0.7), "shifted rows", atol=1e-5)


@pytest.mark.clause("P08.5")
def test_a_tiny_positive_temperature_stays_finite():
    logits = seeded(2, 5, seed=4) * 10

    # the oracle first: the call's writes cannot reach it
    want = loop_probs(logits, 1e-4)
    got = probs(logits, 1e-4)

    assert torch.isfinite(got).all(), f"non-finite probabilities at T=1e-4: {got}"
    assert_close(got.double(), want, "T=1e-4", atol=1e-6)


@pytest.mark.clause("P08.6")
def test_temperature_zero_is_one_hot_at_the_argmax():
    logits = seeded(4, 9, seed=5)

    # the oracle first: the call's writes cannot reach it
    want = torch.nn.functional.one_hot(logits.argmax(-1), 9).float()
    got = probs(logits, 0.0)

    assert torch.equal(got, want), f"temperature 0 gave {got}"


@pytest.mark.clause("P08.6")
def test_temperature_zero_with_a_tied_maximum_picks_the_first():
    logits = torch.tensor([[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, 2.0, 2.0]], device=test_device())

    got = probs(logits, 0)

    want = torch.tensor([[0.0, 1.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0]], device=test_device())
    assert torch.equal(got, want), f"temperature 0 with ties gave {got}"


@pytest.mark.clause("P08.11")
def test_the_logits_are_not_written():
    logits = seeded(3, 5, seed=6)

    with inputs_untouched(logits=logits):
        probs(logits, 0.5)
        probs(logits, 0.0)


# ---- rejection: valid in every respect but one ----


@pytest.mark.clause("P08.8")
@pytest.mark.parametrize("temperature", [-1.0, -1e-9])
def test_a_negative_temperature_is_rejected(temperature):
    logits = seeded(2, 4, seed=7)
    with inputs_untouched(logits=logits):
        assert_rejects(
            lambda: drill.temperature_probs(logits, temperature),
            ValueError,
            "temperature",
            values=(temperature,),
        )


@pytest.mark.clause("P08.7")
@pytest.mark.parametrize("temperature", [0.5, 1.0, 0.0, 1e37])
def test_a_masked_token_gets_zero_and_the_rest_of_its_row_is_unchanged(temperature):
    inf = math.inf
    logits = torch.tensor([[1.0, 2.0, -0.5], [0.3, -inf, 1.2]], device=test_device())

    got = probs(logits, temperature)

    assert got[1, 1] == 0.0, f"a -inf logit got probability {got[1, 1].item()}"
    kept = probs(logits[1:, [0, 2]], temperature)
    assert_close(got[1, [0, 2]], kept[0], f"row 1 without its masked token at T={temperature}")


@pytest.mark.clause("P08.7", "P08.4")
@pytest.mark.parametrize("temperature", [0.8, 1e37])
def test_masked_tokens_in_a_later_row_get_zero_and_the_row_sums_to_one(temperature):
    inf = math.inf
    logits = torch.tensor([[0.1, 0.2, 0.3, 0.4], [-inf, 2.0, -inf, 1.0]], device=test_device())

    got = probs(logits, temperature)

    assert got[1, 0] == 0.0 and got[1, 2] == 0.0, f"row 1: {got[1].tolist()}"
    want = loop_probs(logits, temperature)
    assert_close(got.double(), want, f"masked tokens at T={temperature}", atol=1e-6)


@pytest.mark.clause("P08.6")
def test_temperature_zero_picks_the_first_maximum_in_every_row_of_a_block():
    logits = torch.tensor(
        [[[0.0, 1.0, 0.5], [2.0, 2.0, 1.0]], [[0.0, 0.0, 0.0], [1.0, 3.0, 3.0]]],
        device=test_device(),
    )

    got = probs(logits, 0.0)

    picks = got.argmax(-1).tolist()
    assert picks == [[1, 0], [0, 1]] and bool((got.sum(-1) == 1).all()), f"greedy rows {got}"


@pytest.mark.clause("P08.2", "P08.4")
@pytest.mark.parametrize("shape", [(6,), (2, 3, 6)], ids=str)
def test_any_leading_dims_are_normalised_over_the_last(shape):
    logits = seeded(*shape, seed=10) * 2

    # the oracle first: the call's writes cannot reach it
    want = loop_probs(logits.reshape(-1, shape[-1]), 1.5).reshape(shape)
    got = probs(logits, 1.5)

    assert_close(got.double(), want, f"logits {shape}", atol=1e-6)


@pytest.mark.clause("P08.3", "P08.6")
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
def test_the_greedy_path_is_fp32_too(dtype):
    logits = seeded(2, 5, seed=11).to(dtype)

    # the oracle first: the call's writes cannot reach it
    want = torch.nn.functional.one_hot(logits.float().argmax(-1), 5).float()
    got = probs(logits, 0)

    assert torch.equal(got, want) and got.device == logits.device


@pytest.mark.clause("P08.11")
@pytest.mark.parametrize("temperature", [1.0, 0.0])
def test_the_result_is_a_new_tensor_also_for_fp32_logits(temperature):
    logits = torch.full((2, 4), 0.25, device=test_device())  # already a distribution

    got = probs(logits, temperature)

    assert not shares_storage(got, logits), "the result aliases the caller's logits"


@pytest.mark.clause("P08.1")
def test_logits_and_temperature_are_positional():
    logits = seeded(1, 3, seed=12)

    assert_binds(drill.temperature_probs, logits, 1)
    assert_close(probs(logits, 1).double(), loop_probs(logits, 1.0), "T given as int 1")


@pytest.mark.clause("P08.5")
@pytest.mark.parametrize("temperature", [1.0, 2.0])
def test_fp32_logits_near_the_dtypes_limits_are_shifted_by_their_own_row_max(temperature):
    logits = torch.tensor(
        [[3.0e38, 2.9e38, -3.0e38], [-3.0e38, -2.9e38, -3.0e38]], device=test_device()
    )

    # the oracle first: the call's writes cannot reach it
    want = loop_probs(logits, temperature)
    got = probs(logits, temperature)

    assert torch.isfinite(got).all(), f"non-finite probabilities: {got}"
    assert_close(got.double(), want, f"logits near ±3e38 at T={temperature}", atol=1e-6)
