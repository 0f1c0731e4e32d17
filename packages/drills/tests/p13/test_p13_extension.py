"""P13 extension: this project's rules beyond the kit's contract (tested apart, never scored)."""

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

drill = candidate("DRILL_P13_MODULE")

pytestmark = [pytest.mark.owner("p13"), pytest.mark.extension]


def ids(rows) -> torch.Tensor:
    return torch.tensor(rows, dtype=torch.long, device=test_device())


def floats(rows) -> torch.Tensor:
    return torch.tensor(rows, dtype=torch.float32, device=test_device())


def rejects(argument, logits, history, penalty, errors=BAD_VALUE, values=()):
    tensors = {"logits": logits, "history": history}
    tensors = {k: t for k, t in tensors.items() if isinstance(t, torch.Tensor) and not t.is_meta}
    with inputs_untouched(**tensors):
        assert_rejects(
            lambda: drill.apply_repetition_penalty(logits, history, penalty),
            errors,
            argument,
            values=values,
        )


@pytest.mark.clause("P13.8")
def test_history_with_another_batch_size_is_rejected():
    rejects("history", seeded(2, 6, seed=6), ids([[0, 1], [2, 3], [4, 5]]), 1.2)


@pytest.mark.clause("P13.8")
def test_floating_point_history_is_rejected():
    history = floats([[0.0, 1.0], [2.0, 3.0]])
    rejects("history", seeded(2, 6, seed=7), history, 1.2, WRONG_KIND, values=(history.dtype,))


@pytest.mark.clause("P13.10")
@pytest.mark.parametrize("penalty", [0.0, -1.2, math.nan, math.inf])
def test_a_penalty_that_is_not_positive_and_finite_is_rejected(penalty):
    rejects("penalty", seeded(2, 6, seed=8), ids([[0, 1], [2, 3]]), penalty, values=(penalty,))


@pytest.mark.clause("P13.8")
@pytest.mark.parametrize("bad", ["bool", "1-D", "list"])
def test_history_of_another_kind_or_rank_is_rejected(bad):
    history = ids([[0, 1], [2, 3]])
    history = {"bool": history.bool(), "1-D": history[1], "list": history.tolist()}[bad]
    value = history.dtype if bad == "bool" else history  # the message may name either
    rejects("history", seeded(2, 6, seed=25), history, 1.2, WRONG_KIND, values=(value,))


@pytest.mark.clause("P13.9")
@pytest.mark.parametrize("bad", ["int64", "list", "3-D"])
def test_logits_of_another_kind_or_rank_are_rejected(bad):
    logits = seeded(2, 6, seed=26)
    logits = {"int64": logits.long(), "list": logits.tolist(), "3-D": logits[:, None]}[bad]
    rejects("logits", logits, ids([[0, 1], [2, 3]]), 1.2, WRONG_KIND)


@pytest.mark.clause("P13.10")
@pytest.mark.parametrize("penalty", [True, "1.2", None], ids=repr)
def test_a_penalty_of_another_kind_is_rejected(penalty):
    rejects("penalty", seeded(2, 6, seed=27), ids([[0, 1], [2, 3]]), penalty, WRONG_KIND)


@pytest.mark.clause("P13.11")
@pytest.mark.parametrize("where", ["history", "both"])
def test_meta_tensors_are_rejected(where):
    logits, history = seeded(2, 6, seed=28), ids([[0, 1], [2, 3]])
    if where == "both":
        logits = logits.to("meta")
    rejects(("history", "logits"), logits, history.to("meta"), 1.2)
