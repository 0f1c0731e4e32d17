"""P09 extension: this project's rules beyond the kit's contract (tested apart, never scored)."""

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

drill = candidate("DRILL_P09_MODULE")

pytestmark = [pytest.mark.owner("p09"), pytest.mark.extension]

INF = -math.inf


def tensor(rows) -> torch.Tensor:
    return torch.tensor(rows, dtype=torch.float32, device=test_device())


@pytest.mark.clause("P09.8")
@pytest.mark.parametrize("k", [-1, 7])
def test_k_outside_zero_to_the_vocabulary_is_rejected(k):
    logits = seeded(2, 6, seed=6)
    with inputs_untouched(logits=logits):
        assert_rejects(lambda: drill.top_k_filter(logits, k), BAD_VALUE, "k", values=(k,))


@pytest.mark.clause("P09.7")
@pytest.mark.parametrize("k", [2.5, 2.0, True, None, "2"], ids=repr)
def test_k_of_another_kind_is_rejected(k):
    logits = seeded(2, 6, seed=7)
    with inputs_untouched(logits=logits):
        assert_rejects(lambda: drill.top_k_filter(logits, k), WRONG_KIND, "k")


@pytest.mark.clause("P09.9")
@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.bool, torch.complex64])
def test_logits_that_are_not_floating_are_rejected(dtype):
    logits = seeded(2, 6, seed=8).to(dtype)
    with inputs_untouched(logits=logits):
        assert_rejects(lambda: drill.top_k_filter(logits, 2), WRONG_KIND, "logits")


@pytest.mark.clause("P09.9")
def test_logits_that_are_not_a_tensor_are_rejected():
    logits = [[0.5, 1.5, -1.0], [2.0, 0.0, 1.0]]
    assert_rejects(lambda: drill.top_k_filter(logits, 1), WRONG_KIND, "logits")


@pytest.mark.clause("P09.10")
def test_zero_dimensional_logits_are_rejected():
    logits = torch.tensor(1.5, device=test_device())
    with inputs_untouched(logits=logits):
        assert_rejects(lambda: drill.top_k_filter(logits, 0), BAD_VALUE, "logits")
