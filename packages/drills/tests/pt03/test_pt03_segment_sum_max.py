"""PT03 segment_sum_max(values [N, C], offsets [B + 1]) -> (sums, maxes, valid)."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from gptlab_testkit import BAD_VALUE, assert_close, assert_rejects, candidate, test_device
from gptlab_testkit.oracles import assert_binds, inputs_untouched, seeded

drill = candidate("DRILL_PT03_MODULE")

pytestmark = [pytest.mark.owner("pt03"), pytest.mark.contract]

INF = float("inf")


def long(values: list[int], dtype: torch.dtype = torch.long) -> torch.Tensor:
    return torch.tensor(values, dtype=dtype, device=test_device())


def loop_segments(values: torch.Tensor, offsets: list[int]):
    """(sums in float64 or int64, maxes with 0 for an empty segment, valid), one row at a time."""
    rows = values.tolist()
    C = values.shape[1]
    sums, maxes, valid = [], [], []
    for b in range(len(offsets) - 1):
        segment = rows[offsets[b] : offsets[b + 1]]
        sums.append([sum(row[c] for row in segment) for c in range(C)])
        maxes.append([max(row[c] for row in segment) if segment else 0 for c in range(C)])
        valid.append(bool(segment))
    wide = torch.float64 if values.is_floating_point() else torch.int64
    shape = (len(valid), C)
    as_tensor = lambda rows_, dtype: torch.tensor(rows_, dtype=dtype).reshape(shape)  # noqa: E731
    return as_tensor(sums, wide), as_tensor(maxes, values.dtype), torch.tensor(valid)


def check(values: torch.Tensor, offsets: list[int], what: str, index_dtype=torch.long):
    got = drill.segment_sum_max(values, long(offsets, index_dtype))
    assert isinstance(got, tuple) and len(got) == 3, f"{what}: want (sums, maxes, valid)"
    sums, maxes, valid = got
    want_sums, want_maxes, want_valid = loop_segments(values, offsets)
    B, C = len(offsets) - 1, values.shape[1]
    for name, tensor in (("sums", sums), ("maxes", maxes)):
        assert tensor.shape == (B, C), f"{what}: {name} {tuple(tensor.shape)}, want {(B, C)}"
    assert valid.shape == (B,) and valid.dtype == torch.bool, f"{what}: valid {valid}"
    assert maxes.dtype == values.dtype, f"{what}: maxes {maxes.dtype}, values {values.dtype}"
    assert torch.equal(valid.cpu(), want_valid), f"{what}: valid {valid.tolist()}"
    assert torch.equal(maxes.cpu(), want_maxes), f"{what}: maxes\n{maxes}\nwant\n{want_maxes}"
    if values.is_floating_point():
        assert sums.dtype == values.dtype, f"{what}: sums {sums.dtype}, values {values.dtype}"
        assert_close(sums.cpu().double(), want_sums, f"{what}: sums")
    else:
        assert not sums.is_floating_point(), f"{what}: integer values gave {sums.dtype} sums"
        assert torch.equal(sums.cpu().long(), want_sums), f"{what}: sums\n{sums}\n{want_sums}"
    return sums, maxes, valid


@pytest.mark.clause("PT03.2", "PT03.4")
def test_segments_of_mixed_sizes_match_the_loop():
    values = seeded(9, 3, seed=1)
    check(values, [0, 2, 3, 7, 9], "sizes 2, 1, 4, 2")


@pytest.mark.clause("PT03.4", "PT03.5")
def test_an_empty_segment_has_max_zero_and_is_marked_invalid():
    values = seeded(5, 2, seed=2) + 10.0  # every real max is far from 0
    _, maxes, valid = check(values, [0, 2, 2, 5, 5], "segments 1 and 3 empty")
    assert valid.tolist() == [True, False, True, False]
    assert bool((maxes[1] == 0).all()) and bool((maxes[3] == 0).all()), f"empty maxes {maxes}"


@pytest.mark.clause("PT03.5")
def test_real_maxima_of_zero_negative_or_minus_inf_are_never_taken_for_empty():
    values = torch.tensor(
        [[-3.0, -1.0], [-2.0, -5.0], [0.0, -4.0], [-1.0, 0.0], [-INF, -INF], [-INF, -INF]],
        device=test_device(),
    )
    _, maxes, valid = check(values, [0, 2, 4, 6, 6], "negative, zero, -inf, then empty")
    assert valid.tolist() == [True, True, True, False], f"valid {valid.tolist()}"
    assert maxes[2].tolist() == [-INF, -INF], f"an all -inf segment's max is -inf: {maxes[2]}"


@pytest.mark.clause("PT03.4", "PT03.5")
@pytest.mark.parametrize(
    "offsets",
    [[0, 0, 0, 3, 3, 4], [0, 4, 4, 4, 4], [0, 0, 0, 0, 4]],
    ids=["repeated in the middle", "repeated at the end", "repeated at the start"],
)
def test_repeated_offsets_give_empty_segments(offsets):
    check(seeded(4, 2, seed=3) - 5.0, offsets, f"offsets {offsets}")


@pytest.mark.clause("PT03.2", "PT03.5")
def test_no_rows_at_all_gives_every_segment_empty():
    sums, _, valid = check(seeded(0, 3, seed=4), [0, 0, 0], "N = 0, B = 2")
    assert valid.tolist() == [False, False] and bool((sums == 0).all())


@pytest.mark.clause("PT03.2")
def test_no_segments_at_all():
    check(seeded(0, 2, seed=5), [0], "B = 0")


@pytest.mark.clause("PT03.3")
@pytest.mark.parametrize(
    ("dtype", "index_dtype"),
    [(torch.int64, torch.int64), (torch.int32, torch.int32), (torch.float64, torch.int32)],
    ids=str,
)
def test_integer_and_float_values_keep_their_dtype(dtype, index_dtype):
    values = (seeded(6, 3, seed=6) * 50).to(dtype)
    sums, maxes, valid = check(values, [0, 1, 1, 6], f"{dtype} values", index_dtype)
    assert sums.device == values.device and maxes.device == values.device
    assert valid.device == values.device


@pytest.mark.clause("PT03.6")
@pytest.mark.parametrize("layout", ["every other feature", "transposed", "sliced features"])
def test_noncontiguous_features_are_reduced_by_their_logical_layout(layout):
    views = {
        "every other feature": seeded(7, 8, seed=7)[:, ::2],
        "transposed": seeded(4, 7, seed=7).t(),
        "sliced features": seeded(7, 6, seed=7)[:, 1:5],
    }
    values = views[layout]
    assert not values.is_contiguous()
    check(values, [0, 3, 3, 7], layout)


@pytest.mark.clause("PT03.2", "PT03.4", "PT03.5")
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_random_offsets_match_the_loop(data):
    N = data.draw(st.integers(0, 8), label="N")
    B = data.draw(st.integers(0, 5), label="B")
    C = data.draw(st.integers(1, 3), label="C")
    cuts = sorted(data.draw(st.integers(0, N), label=f"cut[{b}]") for b in range(B - 1))
    offsets = [0, *cuts, N] if B else [0]
    if not B and N:
        N = 0
    values = seeded(N, C, seed=data.draw(st.integers(0, 2**16), label="seed"))
    if data.draw(st.booleans(), label="integer values"):
        values = (values * 20).long()

    check(values, offsets, f"N={N}, offsets={offsets}")


@pytest.mark.clause("PT03.1")
def test_the_arguments_bind_by_name_in_the_kits_order():
    values, offsets = seeded(3, 2, seed=8), long([0, 1, 3])
    assert_binds(drill.segment_sum_max, values, offsets)
    assert_binds(drill.segment_sum_max, offsets=offsets, values=values)
    sums, maxes, valid = drill.segment_sum_max(offsets=offsets, values=values)
    assert_close(sums[1], values[1:].sum(0), "sums called by name")
    assert torch.equal(maxes[1], values[1:].amax(0)) and valid.tolist() == [True, True]


# ---- rejection: valid in every respect but one, before any work ----


def rejected(values: torch.Tensor, offsets: list[int], value: int | None = None) -> None:
    index = long(offsets)
    with inputs_untouched(values=values, offsets=index):
        assert_rejects(
            lambda: drill.segment_sum_max(values, index),
            BAD_VALUE,
            "offsets",
            values=[value] if value is not None else (),
        )


@pytest.mark.clause("PT03.7")
@pytest.mark.parametrize(
    "offsets",
    [[0, 3, 2, 5], [0, 2, 4, 3, 5], [0, 1, 0, 5]],
    ids=["dip in the middle", "dip before the end", "back to 0"],
)
def test_decreasing_offsets_are_rejected(offsets):
    rejected(seeded(5, 2, seed=9), offsets)


@pytest.mark.clause("PT03.7")
@pytest.mark.parametrize("offsets", [[1, 3, 5], [-1, 3, 5]], ids=["first is 1", "first is -1"])
def test_offsets_that_do_not_start_at_zero_are_rejected(offsets):
    rejected(seeded(5, 2, seed=10), offsets, offsets[0])


@pytest.mark.clause("PT03.8")
@pytest.mark.parametrize("last", [4, 6], ids=["short of N", "past N"])
def test_a_last_offset_other_than_n_is_rejected(last):
    rejected(seeded(5, 2, seed=11), [0, 2, last], last)
