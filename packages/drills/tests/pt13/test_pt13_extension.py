"""PT13 extension: this project's rules beyond the kit's contract (tested apart, never scored)."""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import BAD_VALUE, WRONG_KIND, assert_rejects, candidate, test_device
from gptlab_testkit.oracles import inputs_untouched, seeded

drill = candidate("DRILL_PT13_MODULE")

pytestmark = [pytest.mark.owner("pt13"), pytest.mark.extension]


def ids(values: list[list[int]]) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.long, device=test_device())


def mask(values: list[list[int]]) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.bool, device=test_device())


@pytest.mark.clause("PT13.11")
def test_a_masked_position_whose_logits_are_nan_still_adds_zero():
    logits = seeded(2, 3, 4, seed=1)
    logits[1, 1] = torch.nan  # a pad position holding garbage
    token, sums = drill.sequence_logprobs(
        logits, ids([[0, 1, 2], [3, 0, 1]]), mask([[1, 1, 1], [1, 0, 1]])
    )
    assert token[1, 1].item() == 0.0 and bool(sums.isfinite().all()), f"{token}, {sums}"


@pytest.mark.clause("PT13.9")
def test_logits_targets_and_valid_are_only_read():
    logits, targets, valid = (
        seeded(2, 3, 4, seed=10),
        ids([[0, 3, 1], [2, 2, 0]]),
        mask([[1, 0, 1], [0, 1, 1]]),
    )
    with inputs_untouched(logits=logits, targets=targets, valid=valid):
        drill.sequence_logprobs(logits, targets, valid)


def valid_call() -> dict[str, object]:
    return {"logits": seeded(2, 3, 4, seed=2), "targets": ids([[0, 1, 2], [3, 0, 1]]),
            "valid": mask([[1, 1, 0], [1, 0, 1]])}  # fmt: skip


@pytest.mark.clause("PT13.10")
@pytest.mark.parametrize(
    ("argument", "bad", "errors"),
    [
        ("targets", lambda: torch.zeros(2, 3, device=test_device()), WRONG_KIND),
        ("valid", lambda: ids([[1, 1, 0], [1, 0, 1]]), WRONG_KIND),
        ("targets", lambda: ids([[0, 1], [3, 0]]), BAD_VALUE),
        ("valid", lambda: mask([[1, 1, 0]]), BAD_VALUE),
        ("logits", lambda: seeded(2, 3, seed=2), BAD_VALUE),
        ("logits", lambda: seeded(2, 3, 4, seed=2).long(), WRONG_KIND),
        ("logits", lambda: [[[0.0]]], WRONG_KIND),
        ("logits", lambda: seeded(2, 3, 4, seed=2).to("meta"), BAD_VALUE),
    ],
    ids=["float targets", "integer valid", "short targets", "short valid", "2-D logits",
         "integer logits", "a list as logits", "logits on another device"],
)  # fmt: skip
def test_the_reference_rejects_inputs_the_contract_leaves_undefined(argument, bad, errors):
    call = {**valid_call(), argument: bad()}
    kept = {n: t for n, t in call.items() if isinstance(t, torch.Tensor) and not t.is_meta}
    with inputs_untouched(**kept):
        assert_rejects(lambda: drill.sequence_logprobs(**call), errors, argument)


@pytest.mark.clause("PT13.10")
def test_an_empty_vocabulary_is_rejected():
    call = {"logits": seeded(2, 3, 0, seed=3), "targets": ids([[0] * 3] * 2),
            "valid": mask([[0] * 3] * 2)}  # fmt: skip
    assert_rejects(lambda: drill.sequence_logprobs(**call), BAD_VALUE, ("logits", "targets"))
