"""P07 extension: what this project's masked_logits does outside the graded contract."""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import (
    WRONG_KIND,
    assert_rejects,
    candidate,
    test_device,
)
from gptlab_testkit.oracles import inputs_untouched, seeded

drill = candidate("DRILL_P07_MODULE")

pytestmark = [pytest.mark.owner("p07"), pytest.mark.extension]


def bools(rows: list[list[int]]) -> torch.Tensor:
    return torch.tensor(rows, dtype=torch.bool, device=test_device())


def rejects(argument: str, logits: torch.Tensor, allowed: torch.Tensor) -> None:
    with inputs_untouched(logits=logits, allowed=allowed):
        assert_rejects(lambda: drill.masked_logits(logits, allowed), WRONG_KIND, argument)


@pytest.mark.clause("P07.11")
def test_zero_dimensional_logits_are_rejected_naming_logits():
    logits = torch.tensor(1.0)

    assert_rejects(lambda: drill.masked_logits(logits, torch.tensor(True)), ValueError, "logits")


@pytest.mark.clause("P07.11")
@pytest.mark.parametrize("logits_device", ["cpu", "meta"])
def test_a_meta_mask_is_rejected_naming_allowed(logits_device):
    logits = torch.zeros(2, 3, device=logits_device)
    allowed = torch.ones(2, 3, dtype=torch.bool, device="meta")

    assert_rejects(lambda: drill.masked_logits(logits, allowed), ValueError, "allowed")


@pytest.mark.clause("P07.8")
def test_a_mask_that_is_not_bool_is_rejected():
    allowed = bools([[1, 0, 1, 1], [0, 1, 1, 0]]).to(torch.int64)
    rejects("allowed", seeded(2, 4, seed=8), allowed)


@pytest.mark.clause("P07.9")
def test_integer_logits_are_rejected():
    rejects("logits", torch.arange(8, device=test_device()).reshape(2, 4), bools([[1] * 4] * 2))


@pytest.mark.clause("P07.8")
@pytest.mark.parametrize("kind", ["uint8", "float32", "list"])
def test_a_mask_of_another_kind_is_rejected(kind):
    good = bools([[1, 0, 1, 1], [0, 1, 1, 0]])
    allowed = {"uint8": good.to(torch.uint8), "float32": good.float(), "list": good.tolist()}[kind]
    logits = seeded(2, 4, seed=12)
    with inputs_untouched(logits=logits):
        assert_rejects(lambda: drill.masked_logits(logits, allowed), WRONG_KIND, "allowed")


@pytest.mark.clause("P07.9")
@pytest.mark.parametrize("kind", ["bool", "int32", "list"])
def test_logits_of_another_kind_are_rejected(kind):
    allowed = bools([[1, 0, 1], [0, 1, 1]])
    good = seeded(2, 3, seed=13)
    logits = {"bool": good > 0, "int32": good.to(torch.int32), "list": good.tolist()}[kind]
    with inputs_untouched(allowed=allowed):
        assert_rejects(lambda: drill.masked_logits(logits, allowed), WRONG_KIND, "logits")
