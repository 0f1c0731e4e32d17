"""P08 extension: what this project's temperature_probs does outside the graded contract."""

from __future__ import annotations

import math

import pytest
import torch

from gptlab_testkit import WRONG_KIND, assert_rejects, candidate, test_device
from gptlab_testkit.oracles import inputs_untouched, seeded

drill = candidate("DRILL_P08_MODULE")

pytestmark = [pytest.mark.owner("p08"), pytest.mark.extension]


@pytest.mark.clause("P08.12")
@pytest.mark.parametrize("temperature", [1e-45, 5e-324])
def test_a_temperature_too_small_for_fp32_gives_the_greedy_limit_with_shared_ties(temperature):
    logits = torch.tensor([[1.0, 3.0, 3.0, 0.0], [2.0, -math.inf, 1.0, 0.0]])

    got = drill.temperature_probs(logits, temperature)

    assert got.tolist() == [[0.0, 0.5, 0.5, 0.0], [1.0, 0.0, 0.0, 0.0]]


@pytest.mark.clause("P08.12")
def test_a_nan_logit_or_an_all_masked_row_gives_nan_in_that_row_only():
    logits = torch.tensor([[0.0, 1.0], [math.nan, 1.0], [-math.inf, -math.inf]])

    got = drill.temperature_probs(logits, 1.0)

    assert torch.isfinite(got[0]).all() and got[1:].isnan().all()


@pytest.mark.clause("P08.12")
def test_meta_logits_are_computed_by_shape():
    got = drill.temperature_probs(torch.empty(2, 5, device="meta", dtype=torch.float16), 0.5)

    assert got.shape == (2, 5) and got.dtype == torch.float32


@pytest.mark.clause("P08.10")
def test_integer_logits_are_rejected():
    logits = torch.arange(8, device=test_device()).reshape(2, 4)
    assert_rejects(lambda: drill.temperature_probs(logits, 1.0), WRONG_KIND, "logits")


@pytest.mark.clause("P08.9")
@pytest.mark.parametrize("temperature", [True, "1.0", None, torch.tensor(1.0)], ids=repr)
def test_a_temperature_that_is_not_a_number_is_rejected(temperature):
    logits = seeded(2, 4, seed=8)
    with inputs_untouched(logits=logits):
        assert_rejects(
            lambda: drill.temperature_probs(logits, temperature), WRONG_KIND, "temperature"
        )


@pytest.mark.clause("P08.10")
@pytest.mark.parametrize("kind", ["bool", "list"])
def test_logits_of_another_kind_are_rejected(kind):
    good = seeded(2, 4, seed=9)
    logits = {"bool": good > 0, "list": good.tolist()}[kind]

    assert_rejects(lambda: drill.temperature_probs(logits, 1.0), WRONG_KIND, "logits")


@pytest.mark.clause("P08.10")
@pytest.mark.parametrize("shape", [(), (2, 0)], ids=str)
def test_logits_without_a_token_axis_or_tokens_are_a_value_error(shape):
    logits = torch.zeros(shape, device=test_device())

    assert_rejects(lambda: drill.temperature_probs(logits, 1.0), ValueError, "logits")


@pytest.mark.clause("P08.13")
@pytest.mark.parametrize("temperature", [math.nan, math.inf])
def test_a_non_finite_temperature_is_rejected(temperature):
    logits = seeded(2, 4, seed=7)
    with inputs_untouched(logits=logits):
        assert_rejects(
            lambda: drill.temperature_probs(logits, temperature),
            ValueError,
            "temperature",
            values=(temperature,),
        )
