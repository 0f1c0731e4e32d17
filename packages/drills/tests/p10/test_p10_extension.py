"""P10 extension: this project's rules beyond the kit's contract (tested apart, never scored)."""

from __future__ import annotations

import math

import pytest
import torch

from gptlab_testkit import (
    BAD_VALUE,
    WRONG_KIND,
    assert_rejects,
    candidate,
    test_device,
)
from gptlab_testkit.oracles import inputs_untouched, seeded

drill = candidate("DRILL_P10_MODULE")

pytestmark = [pytest.mark.owner("p10"), pytest.mark.extension]


def kept(result: torch.Tensor) -> list[set[int]]:
    rows = result.reshape(-1, result.shape[-1]).tolist()
    return [{i for i, x in enumerate(row) if x > -math.inf} for row in rows]


def tensor(rows) -> torch.Tensor:
    return torch.tensor(rows, dtype=torch.float32, device=test_device())


@pytest.mark.clause("P10.9")
@pytest.mark.parametrize("p", [0.0, -0.2, 1.01, math.nan, math.inf])
def test_p_outside_zero_to_one_is_rejected(p):
    logits = seeded(2, 5, seed=4)
    with inputs_untouched(logits=logits):
        assert_rejects(lambda: drill.top_p_filter(logits, p), BAD_VALUE, "p", values=(p,))


@pytest.mark.clause("P10.8")
@pytest.mark.parametrize("p", [True, "0.5", None], ids=repr)
def test_p_of_another_kind_is_rejected(p):
    logits = seeded(2, 5, seed=5)
    with inputs_untouched(logits=logits):
        assert_rejects(lambda: drill.top_p_filter(logits, p), WRONG_KIND, "p")


@pytest.mark.clause("P10.10")
@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.bool, torch.complex64])
def test_logits_that_are_not_floating_are_rejected(dtype):
    logits = seeded(2, 5, seed=6).to(dtype)
    with inputs_untouched(logits=logits):
        assert_rejects(lambda: drill.top_p_filter(logits, 0.5), WRONG_KIND, "logits")


@pytest.mark.clause("P10.10")
def test_logits_that_are_not_a_tensor_are_rejected():
    logits = [[0.5, 1.5, -1.0], [2.0, 0.0, 1.0]]
    assert_rejects(lambda: drill.top_p_filter(logits, 0.5), WRONG_KIND, "logits")


@pytest.mark.clause("P10.11")
@pytest.mark.parametrize("shape", [(), (2, 0)], ids=["0-d", "V=0"])
def test_logits_without_a_token_are_rejected(shape):
    logits = torch.zeros(shape, device=test_device())
    with inputs_untouched(logits=logits):
        assert_rejects(lambda: drill.top_p_filter(logits, 0.5), BAD_VALUE, "logits")


@pytest.mark.clause("P10.14")
@pytest.mark.parametrize(
    "row", [[0.0, -30.0, 1.0], [0.0] * 20 + [-25.0], [3.0, 2.9, 2.8, -17.0, 2.7]], ids=str
)
def test_p_one_keeps_even_a_token_of_negligible_mass(row):
    # The mass before the last token rounds to 1.0 in fp32: a walk that stops there drops it.
    logits = tensor([row])

    got = drill.top_p_filter(logits, 1.0)

    assert torch.equal(got, logits)
