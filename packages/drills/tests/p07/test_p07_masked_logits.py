"""P07 masked_logits(logits, allowed): forbidden tokens to -inf in a new tensor."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from gptlab_testkit import assert_rejects, boundary_settings, candidate, shares_storage, test_device
from gptlab_testkit.oracles import inputs_untouched, seeded

drill = candidate("DRILL_P07_MODULE")

pytestmark = [pytest.mark.owner("p07"), pytest.mark.contract]


def loop_mask(logits: torch.Tensor, allowed: torch.Tensor) -> list[list[float]]:
    """The oracle, one element at a time: the logit where allowed, -inf elsewhere."""
    return [
        [x if keep else -math.inf for x, keep in zip(row, keeps, strict=True)]
        for row, keeps in zip(logits.tolist(), allowed.tolist(), strict=True)
    ]


def bools(rows: list[list[int]]) -> torch.Tensor:
    return torch.tensor(rows, dtype=torch.bool, device=test_device())


def test_allowed_logits_are_unchanged_and_forbidden_ones_are_minus_inf():
    logits = seeded(3, 5, seed=1)
    allowed = bools([[1, 0, 1, 0, 0], [0, 0, 0, 0, 1], [1, 1, 1, 1, 1]])

    got = drill.masked_logits(logits, allowed)

    assert got.shape == logits.shape and got.dtype == logits.dtype
    assert got.tolist() == loop_mask(logits, allowed)


def test_forbidden_is_exactly_minus_inf_not_a_large_negative_number():
    logits = seeded(2, 4, seed=2) * 1e6
    allowed = bools([[1, 0, 0, 0], [0, 1, 1, 0]])

    got = drill.masked_logits(logits, allowed)

    assert torch.isneginf(got[~allowed]).all(), f"forbidden entries: {got[~allowed].tolist()}"


@boundary_settings(20)
@given(data=st.data())
def test_any_mask_with_an_allowed_token_per_row_matches_the_loop_oracle(data):
    B = data.draw(st.integers(1, 4), label="B")
    V = data.draw(st.integers(1, 9), label="V")
    rows = []
    for b in range(B):
        row = data.draw(st.lists(st.booleans(), min_size=V, max_size=V), label=f"allowed[{b}]")
        row[data.draw(st.integers(0, V - 1), label=f"kept[{b}]")] = True
        rows.append(row)
    logits = seeded(B, V, seed=data.draw(st.integers(0, 2**16), label="seed"))
    allowed = bools(rows)

    got = drill.masked_logits(logits, allowed)

    assert got.tolist() == loop_mask(logits, allowed)


def test_the_inputs_are_not_written():
    logits = seeded(3, 6, seed=3)
    allowed = bools([[1, 0, 1, 0, 1, 0], [0, 1, 0, 1, 0, 1], [1, 1, 0, 0, 1, 1]])

    with inputs_untouched(logits=logits, allowed=allowed):
        drill.masked_logits(logits, allowed)


def test_the_result_is_a_new_tensor_even_when_nothing_is_forbidden():
    logits = seeded(2, 5, seed=4)
    allowed = torch.ones(2, 5, dtype=torch.bool, device=test_device())

    got = drill.masked_logits(logits, allowed)

    assert torch.equal(got, logits)
    assert not shares_storage(got, logits), "the result aliases the caller's logits"


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float64])
def test_the_logits_dtype_is_kept(dtype):
    logits = seeded(2, 4, seed=5, dtype=dtype)
    allowed = bools([[0, 1, 1, 0], [1, 0, 0, 0]])

    got = drill.masked_logits(logits, allowed)

    assert got.dtype == dtype
    assert got.tolist() == loop_mask(logits, allowed)


# ---- rejection: valid in every respect but one, before anything is written ----


def rejects(argument: str, logits: torch.Tensor, allowed: torch.Tensor) -> None:
    with inputs_untouched(logits=logits, allowed=allowed):
        assert_rejects(
            lambda: drill.masked_logits(logits, allowed), (ValueError, TypeError), argument
        )


def test_a_row_with_every_token_forbidden_is_rejected():
    rejects("allowed", seeded(3, 4, seed=6), bools([[1, 0, 0, 0], [0, 0, 0, 0], [0, 1, 0, 0]]))


def test_a_mask_of_another_shape_is_rejected_legibly():
    rejects("allowed", seeded(2, 4, seed=7), bools([[1, 0, 1], [0, 1, 1]]))


def test_a_mask_that_is_not_bool_is_rejected():
    allowed = bools([[1, 0, 1, 1], [0, 1, 1, 0]]).to(torch.int64)
    rejects("allowed", seeded(2, 4, seed=8), allowed)


def test_integer_logits_are_rejected():
    rejects("logits", torch.arange(8, device=test_device()).reshape(2, 4), bools([[1] * 4] * 2))
