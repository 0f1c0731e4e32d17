"""P07 masked_logits(logits, allowed): forbidden tokens to -inf in a new tensor."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from gptlab_testkit import (
    WRONG_KIND,
    assert_rejects,
    boundary_settings,
    candidate,
    shares_storage,
    test_device,
)
from gptlab_testkit.oracles import assert_binds, inputs_untouched, seeded

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


@pytest.mark.clause("P07.2", "P07.3", "P07.4", "P07.5")
def test_allowed_logits_are_unchanged_and_forbidden_ones_are_minus_inf():
    logits = seeded(3, 5, seed=1)
    allowed = bools([[1, 0, 1, 0, 0], [0, 0, 0, 0, 1], [1, 1, 1, 1, 1]])

    # the oracle first: the call's writes cannot reach it
    want = loop_mask(logits, allowed)
    got = drill.masked_logits(logits, allowed)

    assert got.shape == logits.shape and got.dtype == logits.dtype
    assert got.tolist() == want


@pytest.mark.clause("P07.5")
def test_forbidden_is_exactly_minus_inf_not_a_large_negative_number():
    logits = seeded(2, 4, seed=2) * 1e6
    allowed = bools([[1, 0, 0, 0], [0, 1, 1, 0]])

    forbidden = ~allowed  # before the call: the call's writes cannot reach it

    got = drill.masked_logits(logits, allowed)

    assert torch.isneginf(got[forbidden]).all(), f"forbidden entries: {got[forbidden].tolist()}"


@pytest.mark.clause("P07.4", "P07.5")
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

    # the oracle first: the call's writes cannot reach it
    want = loop_mask(logits, allowed)
    got = drill.masked_logits(logits, allowed)

    assert got.tolist() == want


@pytest.mark.clause("P07.10")
def test_the_inputs_are_not_written():
    logits = seeded(3, 6, seed=3)
    allowed = bools([[1, 0, 1, 0, 1, 0], [0, 1, 0, 1, 0, 1], [1, 1, 0, 0, 1, 1]])

    with inputs_untouched(logits=logits, allowed=allowed):
        drill.masked_logits(logits, allowed)


@pytest.mark.clause("P07.10")
def test_the_result_is_a_new_tensor_even_when_nothing_is_forbidden():
    logits = seeded(2, 5, seed=4)
    allowed = torch.ones(2, 5, dtype=torch.bool, device=test_device())

    got = drill.masked_logits(logits, allowed)

    assert torch.equal(got, logits)
    assert not shares_storage(got, logits), "the result aliases the caller's logits"


@pytest.mark.clause("P07.3")
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float64])
def test_the_logits_dtype_is_kept(dtype):
    logits = seeded(2, 4, seed=5, dtype=dtype)
    allowed = bools([[0, 1, 1, 0], [1, 0, 0, 0]])

    # the oracle first: the call's writes cannot reach it
    want = loop_mask(logits, allowed)
    got = drill.masked_logits(logits, allowed)

    assert got.dtype == dtype
    assert got.tolist() == want


# ---- rejection: valid in every respect but one, before anything is written ----


def rejects(argument: str, logits: torch.Tensor, allowed: torch.Tensor) -> None:
    with inputs_untouched(logits=logits, allowed=allowed):
        assert_rejects(lambda: drill.masked_logits(logits, allowed), WRONG_KIND, argument)


@pytest.mark.clause("P07.6")
def test_a_row_with_every_token_forbidden_is_rejected():
    rejects("allowed", seeded(3, 4, seed=6), bools([[1, 0, 0, 0], [0, 0, 0, 0], [0, 1, 0, 0]]))
    rejects("allowed", seeded(2, 3, seed=9), bools([[0, 0, 1], [0, 0, 0]]))


@pytest.mark.clause("P07.7")
def test_a_mask_of_another_shape_is_rejected_legibly():
    rejects("allowed", seeded(2, 4, seed=7), bools([[1, 0, 1], [0, 1, 1]]))


def rejects_value(argument: str, logits: torch.Tensor, allowed: torch.Tensor) -> None:
    with inputs_untouched(logits=logits, allowed=allowed):
        assert_rejects(lambda: drill.masked_logits(logits, allowed), ValueError, argument)


@pytest.mark.clause("P07.6")
def test_an_all_forbidden_row_is_a_value_error_in_a_batch_of_blocks():
    allowed = bools([[1, 1, 0], [0, 0, 1], [0, 0, 0], [0, 1, 0]]).reshape(2, 2, 3)

    rejects_value("allowed", seeded(2, 2, 3, seed=10), allowed)


@pytest.mark.clause("P07.7")
@pytest.mark.parametrize("shape", [(4,), (1, 4), (2, 1), (3, 4), (2, 4, 1)], ids=str)
def test_a_mask_that_would_broadcast_is_a_value_error(shape):
    allowed = torch.ones(shape, dtype=torch.bool, device=test_device())

    rejects_value("allowed", seeded(2, 4, seed=11), allowed)


@pytest.mark.clause("P07.2", "P07.4", "P07.5")
@pytest.mark.parametrize("shape", [(5,), (2, 3, 5)], ids=str)
def test_any_leading_dims_are_masked_row_by_row(shape):
    logits = seeded(*shape, seed=14)
    allowed = (torch.arange(logits.numel(), device=test_device()) % 3 != 1).reshape(shape)

    # the oracle first: the call's writes cannot reach it
    want = torch.where(allowed, logits, torch.full_like(logits, -math.inf))
    got = drill.masked_logits(logits, allowed)

    assert got.shape == logits.shape, f"shape {tuple(got.shape)}"
    assert torch.equal(got, want), "vs elementwise oracle"


@pytest.mark.clause("P07.4", "P07.5")
def test_non_finite_logits_pass_where_allowed_and_become_minus_inf_where_forbidden():
    inf, nan = math.inf, math.nan
    logits = torch.tensor([[1.0, inf, nan, -inf], [inf, nan, -inf, 2.0]], device=test_device())
    allowed = bools([[1, 1, 1, 1], [0, 0, 0, 1]])

    got = drill.masked_logits(logits, allowed)

    assert torch.equal(got[0].isnan(), logits[0].isnan()) and got[0, 1] == inf, f"{got[0]}"
    assert got[0, 3] == -inf and got[0, 0] == 1.0, f"allowed row changed: {got[0].tolist()}"
    assert got[1, :3].tolist() == [-inf] * 3, f"forbidden non-finite logits: {got[1].tolist()}"


@pytest.mark.clause("P07.3")
def test_the_result_stays_on_the_logits_device_in_fp32():
    logits = seeded(2, 3, seed=15)

    got = drill.masked_logits(logits, bools([[1, 0, 0], [1, 1, 0]]))

    assert got.dtype == torch.float32 and got.device == logits.device


@pytest.mark.clause("P07.1")
def test_logits_and_allowed_are_positional():
    logits, allowed = seeded(1, 3, seed=16), bools([[1, 0, 1]])

    assert_binds(drill.masked_logits, logits, allowed)
    assert drill.masked_logits(logits, allowed)[0, 1] == -math.inf


@pytest.mark.clause("P07.4", "P07.5")
@pytest.mark.parametrize("dtype", [torch.float16, torch.float32], ids=str)
def test_a_later_row_of_infinities_keeps_its_allowed_ones_and_drops_the_rest(dtype):
    inf = math.inf
    logits = torch.tensor([[0.5, -1.0, 2.0], [inf, -inf, inf]], dtype=dtype, device=test_device())
    allowed = bools([[1, 1, 1], [1, 1, 0]])

    got = drill.masked_logits(logits, allowed)

    assert got[1].tolist() == [inf, -inf, -inf], f"row 1: {got[1].tolist()}"
    assert torch.equal(got[0], logits[0]), f"row 0: {got[0].tolist()}"
