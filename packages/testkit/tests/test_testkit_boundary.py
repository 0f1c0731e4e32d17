"""The boundary helpers: rejection checks tell foreign errors apart; fingerprints see changes."""

from __future__ import annotations

import math
from collections import OrderedDict

import pytest
import torch
from hypothesis import given

from gptlab_testkit.boundary import (
    INT64_MAX,
    INT64_MIN,
    assert_rejected_unchanged,
    assert_rejects,
    assert_state_unchanged,
    boundary_settings,
    extreme_ints,
    like,
    malformed_shapes,
    names_argument,
    other_devices,
    state_fingerprint,
    wrong_dtypes,
)

pytestmark = [pytest.mark.extension, pytest.mark.owner("grading")]


def raise_(error: BaseException) -> None:
    raise error


def test_argument_names_match_whole_names_only():
    assert names_argument("positions must be long", "positions")
    assert names_argument("past_key_values[1] key: bad", "past_key_values")
    assert not names_argument("cache_start_positions must be long", "positions")


def test_assert_rejects_returns_the_documented_error():
    error = assert_rejects(lambda: raise_(TypeError("slots must be a tensor")), TypeError, "slots")
    assert isinstance(error, TypeError)


@pytest.mark.parametrize(
    ("call", "complaint"),
    [
        (lambda: None, "accepted"),
        (lambda: raise_(IndexError("slots")), "got IndexError"),
        (lambda: raise_(ValueError("something else")), "does not name slots"),
        (lambda: raise_(ValueError("cache_slots")), "does not name slots"),
    ],
    ids=["accepted", "foreign error", "unnamed", "named only inside a longer name"],
)
def test_assert_rejects_fails_on_everything_else(call, complaint):
    with pytest.raises(AssertionError, match=complaint):
        assert_rejects(call, ValueError, "slots")


class Holder:
    def __init__(self) -> None:
        self.tensor = torch.tensor([1.0, math.nan])
        self.order: OrderedDict[str, int] = OrderedDict(a=1, b=2)
        self.count = 0


@pytest.mark.parametrize(
    "change",
    [
        lambda h: h.tensor.__setitem__(0, 2.0),
        lambda h: setattr(h, "tensor", h.tensor.clone()),  # same values, new storage
        lambda h: h.order.move_to_end("a"),  # recency is order
        lambda h: setattr(h, "count", 1),
        lambda h: setattr(h, "extra", None),
    ],
    ids=["written", "reallocated", "reordered", "counter", "new attribute"],
)
def test_fingerprint_sees_every_kind_of_change(change):
    holder = Holder()
    before = state_fingerprint(holder)
    assert_state_unchanged(holder, before)  # NaN compares equal to itself bit-for-bit
    change(holder)
    with pytest.raises(AssertionError, match="state changed"):
        assert_state_unchanged(holder, before)


def test_fingerprint_without_identity_ignores_reallocation():
    holder = Holder()
    before = state_fingerprint(holder, identity=False)
    holder.tensor = holder.tensor.clone()
    assert_state_unchanged(holder, before, identity=False)


def test_rejected_unchanged_catches_a_change_before_the_raise():
    holder = Holder()

    def half_done() -> None:
        holder.count += 1
        raise ValueError("count too large")

    with pytest.raises(AssertionError, match="count"):
        assert_rejected_unchanged(holder, half_done, ValueError, "count")


@given(shape=malformed_shapes((2, None, 3)))
@boundary_settings(max_examples=20)
def test_malformed_shapes_differ_from_the_expected_shape(shape):
    fits = len(shape) == 3 and shape[0] == 2 and shape[2] == 3
    assert not fits


@given(value=extreme_ints(minimum=1, maximum=10), dtype=wrong_dtypes(torch.long))
@boundary_settings(max_examples=20)
def test_value_strategies_stay_outside_what_is_valid(value, dtype):
    assert not 1 <= value <= 10
    assert dtype != torch.long


def test_int64_edges_and_like():
    assert INT64_MAX + 1 == -INT64_MIN
    source = torch.arange(4)
    copy = like(source, dtype=torch.int32)
    assert copy.dtype == torch.int32 and copy.tolist() == [0, 1, 2, 3]
    assert like(source, shape=(2, 2)).shape == (2, 2)
    assert copy.data_ptr() != source.data_ptr()
    assert torch.device("cpu") not in other_devices("cpu")
