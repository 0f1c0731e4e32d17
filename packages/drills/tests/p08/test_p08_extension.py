"""P08 extension: what this project's temperature_probs does outside the graded contract."""

from __future__ import annotations

import math

import pytest
import torch

from gptlab_testkit import candidate

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
