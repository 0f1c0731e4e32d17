"""PT02 pack_valid(x, lengths) -> (flat, row_ids, col_ids); restore_valid(...) -> [B, T, C]."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from gptlab_testkit import BAD_VALUE, assert_rejects, candidate, test_device
from gptlab_testkit.oracles import CountedCalls, assert_binds, inputs_untouched, seeded

drill = candidate("DRILL_PT02_MODULE")

pytestmark = [pytest.mark.owner("pt02"), pytest.mark.contract]


def long(values: list[int], dtype: torch.dtype = torch.long) -> torch.Tensor:
    return torch.tensor(values, dtype=dtype, device=test_device())


def loop_pack(x: torch.Tensor, lengths: list[int]) -> tuple[torch.Tensor, list[int], list[int]]:
    """The Python reference: row after row, each row's valid steps in time order."""
    rows = [b for b, n in enumerate(lengths) for _ in range(n)]
    cols = [t for n in lengths for t in range(n)]
    if not rows:
        return x.new_zeros(0, x.shape[2]), rows, cols
    flat = torch.stack([x[b, t] for b, t in zip(rows, cols, strict=True)])
    return flat, rows, cols


def loop_restore(flat, rows, cols, batch, time, fill) -> torch.Tensor:
    out = torch.full((batch, time, flat.shape[1]), fill, dtype=flat.dtype, device=flat.device)
    for n, (b, t) in enumerate(zip(rows, cols, strict=True)):
        out[b, t] = flat[n]
    return out


def ids(tensor: torch.Tensor, what: str) -> list[int]:
    assert isinstance(tensor, torch.Tensor), f"{what} must be a tensor, got {type(tensor)}"
    assert not tensor.is_floating_point() and tensor.dtype != torch.bool, f"{what}: {tensor.dtype}"
    assert tensor.dim() == 1, f"{what} must be 1-D, got shape {tuple(tensor.shape)}"
    return [int(v) for v in tensor.tolist()]


def check_pack(x: torch.Tensor, lengths: list[int], what: str):
    # the oracle first: the call's writes cannot reach it
    want, rows, cols = loop_pack(x, lengths)
    flat, row_ids, col_ids = drill.pack_valid(x, long(lengths))
    assert ids(row_ids, "row_ids") == rows, f"{what}: row_ids {row_ids.tolist()}, want {rows}"
    assert ids(col_ids, "col_ids") == cols, f"{what}: col_ids {col_ids.tolist()}, want {cols}"
    assert flat.shape == want.shape, f"{what}: flat {tuple(flat.shape)}, want {tuple(want.shape)}"
    assert flat.dtype == x.dtype, f"{what}: flat is {flat.dtype}, x is {x.dtype}"
    assert torch.equal(flat, want), f"{what}: flat differs from the row-major loop\n{flat}\n{want}"
    return flat, row_ids, col_ids


def check_round_trip(x: torch.Tensor, lengths: list[int], fill: float, what: str) -> None:
    flat, row_ids, col_ids = check_pack(x, lengths, what)
    B, T, _ = x.shape
    got = drill.restore_valid(flat, row_ids, col_ids, B, T, fill)
    assert got.shape == x.shape, f"{what}: restored {tuple(got.shape)}, want {tuple(x.shape)}"
    assert got.dtype == x.dtype, f"{what}: restored {got.dtype}, x is {x.dtype}"
    for b, n in enumerate(lengths):
        assert torch.equal(got[b, :n], x[b, :n]), f"{what}: row {b}'s valid tokens changed"
        pads = got[b, n:]
        assert bool((pads == fill).all()), f"{what}: row {b}'s pads are not {fill}: {pads}"


@pytest.mark.clause("PT02.2", "PT02.4")
def test_mixed_lengths_pack_row_after_row():
    x = seeded(3, 4, 2, seed=1)
    check_pack(x, [2, 4, 1], "lengths 2, 4, 1")


@pytest.mark.clause("PT02.2", "PT02.5")
@pytest.mark.parametrize("fill", [0.0, -7.5], ids=str)
def test_a_round_trip_restores_every_valid_token_and_fills_the_rest(fill):
    x = seeded(3, 5, 3, seed=2)
    check_round_trip(x, [3, 5, 1], fill, f"round trip, fill {fill}")


@pytest.mark.clause("PT02.4", "PT02.5")
def test_zero_length_rows_between_full_ones():
    x = seeded(4, 3, 2, seed=3)
    check_round_trip(x, [3, 0, 0, 2], -1.0, "rows 1 and 2 empty")


@pytest.mark.clause("PT02.2", "PT02.5")
def test_an_all_empty_batch_packs_to_nothing_and_restores_to_fill():
    x = seeded(3, 4, 2, seed=4)
    flat, row_ids, col_ids = check_pack(x, [0, 0, 0], "all empty")
    assert flat.shape == (0, 2), f"flat {tuple(flat.shape)}"

    got = drill.restore_valid(flat, row_ids, col_ids, 3, 4, 2.5)

    assert got.shape == (3, 4, 2) and bool((got == 2.5).all()), f"all fill, got {got}"


@pytest.mark.clause("PT02.2", "PT02.5")
def test_no_time_steps_at_all():
    x = seeded(2, 0, 3, seed=5)
    flat, row_ids, col_ids = check_pack(x, [0, 0], "T = 0")

    got = drill.restore_valid(flat, row_ids, col_ids, 2, 0, 0.0)

    assert got.shape == (2, 0, 3), f"restored {tuple(got.shape)}"


@pytest.mark.clause("PT02.6")
def test_restore_places_any_coordinates_it_is_given():
    # Coordinates pack_valid would never make: out of order, holes inside a row.
    flat = seeded(4, 2, seed=6)
    rows, cols = [2, 0, 2, 1], [3, 1, 0, 2]

    # the oracle first: the call's writes cannot reach it
    want = loop_restore(flat, rows, cols, 3, 4, -2.0)
    got = drill.restore_valid(flat, long(rows), long(cols), 3, 4, -2.0)

    assert torch.equal(got, want), f"scattered coordinates\n{got}\n{want}"


@pytest.mark.clause("PT02.7")
@pytest.mark.parametrize("layout", ["transposed", "strided time", "sliced features"])
def test_a_noncontiguous_x_packs_by_its_logical_layout(layout):
    views = {
        "transposed": seeded(3, 2, 5, seed=7).transpose(1, 2),  # [3, 5, 2]
        "strided time": seeded(3, 10, 2, seed=7)[:, ::2],
        "sliced features": seeded(3, 5, 4, seed=7)[:, :, 1:3],
    }
    x = views[layout]
    assert not x.is_contiguous()
    check_round_trip(x, [2, 5, 0], 9.0, layout)


@pytest.mark.clause("PT02.7")
def test_a_noncontiguous_flat_restores_by_its_logical_layout():
    flat = seeded(2, 3, seed=8).t()  # [3, 2], column-major
    rows, cols = [0, 1, 1], [0, 0, 2]

    # the oracle first: the call's writes cannot reach it
    want = loop_restore(flat.contiguous(), rows, cols, 2, 3, 0.0)
    got = drill.restore_valid(flat, long(rows), long(cols), 2, 3, 0.0)

    assert torch.equal(got, want)


@pytest.mark.clause("PT02.3")
@pytest.mark.parametrize(
    ("dtype", "index_dtype", "fill"),
    [
        (torch.float32, torch.int32, 0.5),
        (torch.bfloat16, torch.int64, -1.0),
        (torch.int64, torch.int32, -1),
    ],
    ids=str,
)
def test_dtypes_and_device_are_kept(dtype, index_dtype, fill):
    x = (seeded(2, 3, 2, seed=9) * 100).to(dtype)
    flat, row_ids, col_ids = drill.pack_valid(x, long([1, 3], index_dtype))
    assert flat.dtype == dtype and flat.device == x.device, f"flat {flat.dtype} on {flat.device}"
    assert row_ids.device == x.device and col_ids.device == x.device, "ids on another device"

    got = drill.restore_valid(flat, row_ids, col_ids, 2, 3, fill)

    assert got.dtype == dtype and got.device == x.device, f"restored {got.dtype} on {got.device}"
    assert torch.equal(got[1], x[1]) and bool((got[0, 1:] == fill).all())


@pytest.mark.clause("PT02.4", "PT02.5")
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_any_small_batch_matches_the_python_reference(data):
    B = data.draw(st.integers(0, 4), label="B")
    T = data.draw(st.integers(0, 5), label="T")
    C = data.draw(st.integers(1, 3), label="C")
    lengths = [data.draw(st.integers(0, T), label=f"lengths[{b}]") for b in range(B)]
    x = seeded(B, T, C, seed=data.draw(st.integers(0, 2**16), label="seed"))

    check_round_trip(x, lengths, -3.0, f"B={B}, T={T}, lengths={lengths}")


def torch_calls(B: int) -> tuple[int, int]:
    x, lengths = seeded(B, 4, 2, seed=B), long([(b % 5) for b in range(B)])
    with CountedCalls() as packing:  # in judge mode, counted by the worker
        flat, row_ids, col_ids = drill.pack_valid(x, lengths)
    with CountedCalls() as restoring:
        drill.restore_valid(flat, row_ids, col_ids, B, 4, 0.0)
    return packing.calls, restoring.calls


@pytest.mark.clause("PT02.8")
@pytest.mark.parametrize("B", [9, 40])
def test_neither_function_loops_over_rows(B):
    small, large = torch_calls(3), torch_calls(B)

    assert large[0] <= small[0], f"pack_valid: {small[0]} torch calls for B=3, {large[0]} for B={B}"
    assert large[1] <= small[1], f"restore_valid: {small[1]} calls for B=3, {large[1]} for B={B}"


@pytest.mark.clause("PT02.1")
def test_the_arguments_bind_by_name_in_the_kits_order():
    x, lengths = seeded(2, 3, 2, seed=10), long([2, 1])
    assert_binds(drill.pack_valid, x, lengths)
    assert_binds(drill.pack_valid, lengths=lengths, x=x)
    flat, row_ids, col_ids = drill.pack_valid(lengths=lengths, x=x)
    assert ids(row_ids, "row_ids") == [0, 0, 1] and ids(col_ids, "col_ids") == [0, 1, 0]
    assert_binds(drill.restore_valid, flat, row_ids, col_ids, 2, 3, 0.0)
    assert_binds(
        drill.restore_valid, fill=0.0, time=3, batch=2, col_ids=col_ids, row_ids=row_ids, flat=flat
    )
    by_name = drill.restore_valid(
        fill=0.0, time=3, batch=2, col_ids=col_ids, row_ids=row_ids, flat=flat
    )
    assert torch.equal(by_name, loop_restore(flat, [0, 0, 1], [0, 1, 0], 2, 3, 0.0))


@pytest.mark.clause("PT02.4")
def test_lengths_of_zero_and_t_are_accepted():
    x = seeded(3, 4, 2, seed=12)
    x_given = x.clone()  # before the first call: its writes cannot reach the checked call
    try:
        drill.pack_valid(x, long([4, 0, 4]))
    except ValueError as error:
        raise AssertionError(f"lengths 0 and T were rejected: {error}") from error
    check_pack(x_given, [4, 0, 4], "lengths 0 and T")


# ---- rejection: valid in every respect but one, before any work ----


@pytest.mark.clause("PT02.9")
@pytest.mark.parametrize(
    ("lengths", "value"),
    [([2, -1, 0], -1), ([2, 0, 5], 5), ([2, 3, 9], 9)],
    ids=["negative in row 1", "past T in row 2", "far past T in row 2"],
)
def test_a_length_outside_zero_to_t_is_rejected(lengths, value):
    x, index = seeded(3, 4, 2, seed=11), long(lengths)
    with inputs_untouched(x=x, lengths=index):
        assert_rejects(lambda: drill.pack_valid(x, index), BAD_VALUE, "lengths", values=[value])
