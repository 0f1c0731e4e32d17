"""P13 apply_repetition_penalty(logits, history, penalty): sign-aware, once per distinct token."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from gptlab_testkit import assert_rejects, boundary_settings, candidate, shares_storage, test_device
from gptlab_testkit.oracles import inputs_untouched, seeded

drill = candidate("DRILL_P13_MODULE")

pytestmark = [pytest.mark.owner("p13"), pytest.mark.contract]


def loop_penalty(logits: torch.Tensor, history: torch.Tensor, penalty: float) -> list[list[float]]:
    """The oracle, one row and one distinct token at a time, in the logits' dtype."""
    out = logits.clone()
    for b, row in enumerate(history.tolist()):
        for token in set(row):
            x = out[b, token]
            out[b, token] = x / penalty if x > 0 else x * penalty
    return out.tolist()


def ids(rows) -> torch.Tensor:
    return torch.tensor(rows, dtype=torch.long, device=test_device())


def floats(rows) -> torch.Tensor:
    return torch.tensor(rows, dtype=torch.float32, device=test_device())


def test_penalised_tokens_match_the_loop_oracle():
    logits = seeded(3, 8, seed=1) * 2
    history = ids([[1, 4, 4, 7], [0, 0, 0, 0], [6, 2, 5, 1]])

    got = drill.apply_repetition_penalty(logits, history, 1.3)

    assert got.tolist() == loop_penalty(logits, history, 1.3)


def test_positive_logits_are_divided_and_negative_ones_multiplied():
    logits = floats([[2.0, -2.0, 0.0, 1.0]])

    got = drill.apply_repetition_penalty(logits, ids([[0, 1, 2]]), 2.0)

    assert got.tolist() == [[1.0, -4.0, 0.0, 1.0]]


def test_a_repeated_token_is_penalised_once():
    logits = floats([[3.0, -3.0, 1.0]])

    got = drill.apply_repetition_penalty(logits, ids([[0, 0, 0, 1, 1]]), 1.5)

    assert got.tolist() == [[2.0, -4.5, 1.0]]


def test_each_row_is_penalised_only_for_its_own_history():
    logits = floats([[4.0, 4.0, 4.0], [4.0, 4.0, 4.0]])

    got = drill.apply_repetition_penalty(logits, ids([[0, 0], [2, 1]]), 2.0)

    assert got.tolist() == [[2.0, 4.0, 4.0], [4.0, 2.0, 2.0]]


@boundary_settings(20)
@given(data=st.data())
def test_any_history_matches_the_loop_oracle(data):
    B = data.draw(st.integers(1, 4), label="B")
    V = data.draw(st.integers(1, 8), label="V")
    T = data.draw(st.integers(0, 6), label="T")
    rows = [data.draw(st.lists(st.integers(0, V - 1), min_size=T, max_size=T)) for _ in range(B)]
    penalty = data.draw(st.sampled_from([0.5, 1.0, 1.2, 3.0]), label="penalty")
    logits = seeded(B, V, seed=data.draw(st.integers(0, 2**16), label="seed")) * 3
    history = ids(rows).reshape(B, T)

    got = drill.apply_repetition_penalty(logits, history, penalty)

    assert got.tolist() == loop_penalty(logits, history, penalty)


def test_an_empty_history_returns_an_equal_new_tensor():
    logits = seeded(2, 5, seed=2)

    got = drill.apply_repetition_penalty(logits, ids([[], []]).reshape(2, 0), 1.4)

    assert torch.equal(got, logits)
    assert not shares_storage(got, logits), "the result aliases the caller's logits"


def test_the_inputs_are_not_written():
    logits, history = seeded(2, 6, seed=3), ids([[1, 2, 2], [5, 0, 3]])

    with inputs_untouched(logits=logits, history=history):
        drill.apply_repetition_penalty(logits, history, 1.7)


def test_int32_history_and_half_logits_are_accepted():
    logits = seeded(2, 6, seed=4, dtype=torch.float16)
    history = ids([[1, 2], [5, 5]]).to(torch.int32)

    got = drill.apply_repetition_penalty(logits, history, 2.0)

    assert got.dtype == torch.float16
    assert got.tolist() == loop_penalty(logits, history, 2.0)


# ---- rejection: valid in every respect but one, before anything is written ----


def rejects(argument, logits, history, penalty):
    with inputs_untouched(logits=logits, history=history):
        assert_rejects(
            lambda: drill.apply_repetition_penalty(logits, history, penalty),
            (ValueError, TypeError),
            argument,
        )


@pytest.mark.parametrize("bad_id", [6, -1])
def test_a_token_id_outside_the_vocabulary_in_a_later_row_is_rejected(bad_id):
    rejects("history", seeded(2, 6, seed=5), ids([[0, 1, 2], [3, bad_id, 4]]), 1.2)


def test_history_with_another_batch_size_is_rejected():
    rejects("history", seeded(2, 6, seed=6), ids([[0, 1], [2, 3], [4, 5]]), 1.2)


def test_floating_point_history_is_rejected():
    rejects("history", seeded(2, 6, seed=7), floats([[0.0, 1.0], [2.0, 3.0]]), 1.2)


@pytest.mark.parametrize("penalty", [0.0, -1.2, math.nan, math.inf])
def test_a_penalty_that_is_not_positive_and_finite_is_rejected(penalty):
    rejects("penalty", seeded(2, 6, seed=8), ids([[0, 1], [2, 3]]), penalty)
