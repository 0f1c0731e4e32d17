"""P13 apply_repetition_penalty(logits, history, penalty): sign-aware, once per distinct token."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from gptlab_testkit import (
    BAD_VALUE,
    assert_close,
    assert_rejects,
    boundary_settings,
    candidate,
    shares_storage,
    test_device,
)
from gptlab_testkit.oracles import assert_binds, inputs_untouched, seeded

drill = candidate("DRILL_P13_MODULE")

pytestmark = [pytest.mark.owner("p13"), pytest.mark.contract]


def loop_penalty(logits: torch.Tensor, history: torch.Tensor, penalty: float) -> torch.Tensor:
    """The oracle, one row and one distinct token at a time, in float64."""
    out = logits.double().clone()
    for b, row in enumerate(history.tolist()):
        for token in set(row):
            x = out[b, token]
            out[b, token] = x / penalty if x > 0 else x * penalty
    return out


TOLERANCE = {torch.float16: 1e-3, torch.bfloat16: 1e-2}  # one rounding of the result


def assert_penalised(got, logits, history, penalty) -> None:
    """Penalised entries match the oracle at the dtype's tolerance (float64 inside is
    accepted); every other entry is the caller's logit, bit for bit."""
    assert isinstance(got, torch.Tensor) and got.dtype == logits.dtype, "logits' dtype"
    assert tuple(got.shape) == tuple(logits.shape), f"shape {tuple(got.shape)}"
    seen = torch.zeros(logits.shape, dtype=torch.bool)
    for b, row in enumerate(history.tolist()):
        seen[b, row] = True
    seen = seen.to(logits.device)
    assert torch.equal(got[~seen], logits[~seen]), "a logit outside the history changed"
    tol = TOLERANCE.get(logits.dtype, 1e-6)
    want = loop_penalty(logits, history, penalty).to(logits.dtype).double()
    assert_close(got[seen].double(), want[seen], "penalised logits", atol=tol, rtol=tol)


def ids(rows) -> torch.Tensor:
    return torch.tensor(rows, dtype=torch.long, device=test_device())


def floats(rows) -> torch.Tensor:
    return torch.tensor(rows, dtype=torch.float32, device=test_device())


@pytest.mark.clause("P13.4", "P13.6")
def test_penalised_tokens_match_the_loop_oracle():
    logits = seeded(3, 8, seed=1) * 2
    history = ids([[1, 4, 4, 7], [0, 0, 0, 0], [6, 2, 5, 1]])

    # the oracle first: the call's writes cannot reach it
    logits_given = logits.clone()
    history_given = history.clone()
    got = drill.apply_repetition_penalty(logits, history, 1.3)

    assert_penalised(got, logits_given, history_given, 1.3)


@pytest.mark.clause("P13.4")
def test_positive_logits_are_divided_and_negative_ones_multiplied():
    logits = floats([[2.0, -2.0, 0.0, 1.0]])

    got = drill.apply_repetition_penalty(logits, ids([[0, 1, 2]]), 2.0)

    assert got.tolist() == [[1.0, -4.0, 0.0, 1.0]]


@pytest.mark.clause("P13.5")
def test_a_repeated_token_is_penalised_once():
    logits = floats([[3.0, -3.0, 1.0]])

    got = drill.apply_repetition_penalty(logits, ids([[0, 0, 0, 1, 1]]), 1.5)

    assert got.tolist() == [[2.0, -4.5, 1.0]]


@pytest.mark.clause("P13.6")
def test_each_row_is_penalised_only_for_its_own_history():
    logits = floats([[4.0, 4.0, 4.0], [4.0, 4.0, 4.0]])

    got = drill.apply_repetition_penalty(logits, ids([[0, 0], [2, 1]]), 2.0)

    assert got.tolist() == [[2.0, 4.0, 4.0], [4.0, 2.0, 2.0]]


@pytest.mark.clause("P13.4", "P13.5", "P13.6")
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

    # the oracle first: the call's writes cannot reach it
    logits_given = logits.clone()
    history_given = history.clone()
    got = drill.apply_repetition_penalty(logits, history, penalty)

    assert_penalised(got, logits_given, history_given, penalty)


@pytest.mark.clause("P13.12")
def test_an_empty_history_returns_an_equal_new_tensor():
    logits = seeded(2, 5, seed=2)

    got = drill.apply_repetition_penalty(logits, ids([[], []]).reshape(2, 0), 1.4)

    assert torch.equal(got, logits)
    assert not shares_storage(got, logits), "the result aliases the caller's logits"


@pytest.mark.clause("P13.12")
def test_the_inputs_are_not_written():
    logits, history = seeded(2, 6, seed=3), ids([[1, 2, 2], [5, 0, 3]])

    with inputs_untouched(logits=logits, history=history):
        drill.apply_repetition_penalty(logits, history, 1.7)


@pytest.mark.clause("P13.3", "P13.4")
def test_int32_history_and_half_logits_are_accepted():
    logits = seeded(2, 6, seed=4, dtype=torch.float16)
    history = ids([[1, 2], [5, 5]]).to(torch.int32)

    # the oracle first: the call's writes cannot reach it
    logits_given = logits.clone()
    history_given = history.clone()
    got = drill.apply_repetition_penalty(logits, history, 2.0)

    assert_penalised(got, logits_given, history_given, 2.0)


# ---- rejection: valid in every respect but one, before anything is written ----


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


@pytest.mark.clause("P13.7")
@pytest.mark.parametrize("bad_id", [6, -1])
def test_a_token_id_outside_the_vocabulary_in_a_later_row_is_rejected(bad_id):
    rejects(
        "history", seeded(2, 6, seed=5), ids([[0, 1, 2], [3, bad_id, 4]]), 1.2, values=(bad_id,)
    )


@pytest.mark.clause("P13.1")
def test_the_signature_takes_three_positional_arguments():
    logits, history = seeded(2, 5, seed=20), ids([[0, 1], [2, 2]])

    assert_binds(drill.apply_repetition_penalty, logits, history, 1.5)
    assert_penalised(drill.apply_repetition_penalty(logits, history, 1.5), logits, history, 1.5)


@pytest.mark.clause("P13.2", "P13.3", "P13.4")
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float64])
def test_other_floating_dtypes_keep_their_dtype_and_shape(dtype):
    logits = (seeded(3, 7, seed=21) * 3).to(dtype)
    history = ids([[1, 1, 6], [0, 2, 3], [5, 4, 4]])

    # the oracle first: the call's writes cannot reach it
    logits_given = logits.clone()
    history_given = history.clone()
    got = drill.apply_repetition_penalty(logits, history, 1.7)

    assert_penalised(got, logits_given, history_given, 1.7)


@pytest.mark.clause("P13.3")
@pytest.mark.parametrize("dtype", [torch.int32, torch.int16, torch.uint8])
def test_history_of_another_integer_dtype_is_accepted(dtype):
    logits, history = seeded(2, 6, seed=22) * 2, ids([[1, 5, 5], [0, 3, 2]])
    # the oracle's copy first: the call's writes cannot reach it
    logits_given = logits.clone()

    try:
        got = drill.apply_repetition_penalty(logits, history.to(dtype), 1.4)
    except Exception as error:  # the clause accepts it: a rejection is this test's failure
        raise AssertionError(f"a {dtype} history was refused: {error}") from error

    assert_penalised(got, logits_given, history, 1.4)


@pytest.mark.clause("P13.4")
def test_a_zero_logit_is_multiplied_and_a_penalty_below_one_rewards():
    logits = floats([[0.0, 1.0, -1.0, 4.0], [2.0, -2.0, 0.0, 1.0]])

    got = drill.apply_repetition_penalty(logits, ids([[0, 3], [0, 1]]), 0.5)

    assert got.tolist() == [[0.0, 1.0, -1.0, 8.0], [4.0, -1.0, 0.0, 1.0]]


@pytest.mark.clause("P13.5")
def test_a_token_repeated_in_a_later_row_is_penalised_once():
    logits = floats([[8.0, 8.0, -8.0], [8.0, 8.0, -8.0]])

    got = drill.apply_repetition_penalty(logits, ids([[2, 0, 1], [1, 1, 2]]), 2.0)

    assert got.tolist() == [[4.0, 4.0, -16.0], [8.0, 4.0, -16.0]]


@pytest.mark.clause("P13.6")
def test_a_row_is_penalised_the_same_alone_and_in_a_batch():
    logits, history = seeded(3, 6, seed=23) * 3, ids([[0, 1, 1], [5, 0, 2], [3, 3, 3]])

    batched = drill.apply_repetition_penalty(logits, history, 1.9)

    for b in range(3):
        alone = drill.apply_repetition_penalty(logits[b : b + 1].clone(), history[b : b + 1], 1.9)
        assert torch.equal(batched[b : b + 1], alone), f"row {b} depends on the other rows"


@pytest.mark.clause("P13.12")
def test_a_penalised_result_is_a_new_tensor():
    logits = seeded(2, 6, seed=24)

    got = drill.apply_repetition_penalty(logits, ids([[0], [1]]), 1.5)

    assert not shares_storage(got, logits), "the result aliases the caller's logits"
