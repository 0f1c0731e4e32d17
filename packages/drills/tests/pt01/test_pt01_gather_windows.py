"""PT01 gather_windows(x [B, T, C], starts [B], width) -> [B, width, C]: each row's window."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from gptlab_testkit import BAD_VALUE, WRONG_KIND, assert_rejects, candidate, test_device
from gptlab_testkit.boundary import other_devices
from gptlab_testkit.oracles import CountedCalls, assert_binds, inputs_untouched, seeded

drill = candidate("DRILL_PT01_MODULE")

pytestmark = [pytest.mark.owner("pt01"), pytest.mark.contract]


def long(values: list[int], dtype: torch.dtype = torch.long) -> torch.Tensor:
    return torch.tensor(values, dtype=dtype, device=test_device())


def loop_windows(x: torch.Tensor, starts: list[int], width: int) -> torch.Tensor:
    """[B, width, C], one row's slice at a time."""
    B, _, C = x.shape
    out = torch.empty(B, width, C, dtype=x.dtype, device=x.device)
    for b, start in enumerate(starts):
        out[b] = x[b, start : start + width]
    return out


def check(x: torch.Tensor, starts: list[int], width: int, what: str) -> None:
    # the oracle first: the call's writes cannot reach it
    want = loop_windows(x, starts, width)
    got = drill.gather_windows(x, long(starts), width)
    assert got.shape == want.shape, f"{what}: shape {tuple(got.shape)}, want {tuple(want.shape)}"
    assert got.dtype == x.dtype, f"{what}: dtype {got.dtype}, x is {x.dtype}"
    assert torch.equal(got, want), f"{what}: differs from the per-row slices\n{got}\n{want}"


@pytest.mark.clause("PT01.2", "PT01.4")
def test_each_row_takes_its_own_window():
    x = seeded(3, 7, 2, seed=1)
    check(x, [2, 0, 4], 3, "starts 2, 0, 4, width 3")


@pytest.mark.clause("PT01.4")
def test_windows_touching_both_edges():
    x = seeded(3, 6, 4, seed=2)
    x_given = x.clone()  # before the first call: its writes cannot reach the second check
    check(x, [1, 0, 2], 4, "row 1 at the first step, row 2 ending at the last")
    check(x_given, [0, 3, 3], 3, "rows 1 and 2 end exactly at T")


@pytest.mark.clause("PT01.4")
def test_a_full_width_window_is_the_whole_row():
    x = seeded(2, 5, 3, seed=3)
    check(x, [0, 0], 5, "width == T")


@pytest.mark.clause("PT01.2")
def test_width_zero_gives_an_empty_window_per_row():
    x = seeded(3, 4, 2, seed=4)
    check(x, [0, 2, 4], 0, "width 0")


@pytest.mark.clause("PT01.2")
def test_an_empty_batch_gives_an_empty_result():
    x = seeded(0, 5, 3, seed=5)
    check(x, [], 2, "B = 0")


@pytest.mark.clause("PT01.5")
@pytest.mark.parametrize(
    "layout",
    ["transposed", "strided time", "sliced features", "expanded batch"],
)
def test_a_noncontiguous_x_is_gathered_by_its_logical_layout(layout):
    base = seeded(3, 8, 6, seed=6)
    views = {
        "transposed": seeded(3, 6, 8, seed=6).transpose(1, 2),  # [3, 8, 6], C stride 8
        "strided time": seeded(3, 16, 6, seed=6)[:, ::2],  # T stride 2
        "sliced features": seeded(3, 8, 9, seed=6)[:, :, 2:8],  # offset, C of 6 in 9
        "expanded batch": base[:1].expand(3, 8, 6),  # batch stride 0
    }
    x = views[layout]
    assert not x.is_contiguous()
    check(x, [1, 5, 3], 3, layout)


@pytest.mark.clause("PT01.3")
@pytest.mark.parametrize(
    ("dtype", "index_dtype"),
    [(torch.float32, torch.int32), (torch.bfloat16, torch.int64), (torch.int64, torch.int32)],
    ids=str,
)
def test_the_result_keeps_xs_dtype_and_device(dtype, index_dtype):
    x = (seeded(2, 5, 3, seed=7) * 100).to(dtype)

    # the oracle first: the call's writes cannot reach it
    want = loop_windows(x, [3, 1], 2)
    got = drill.gather_windows(x, long([3, 1], index_dtype), 2)

    assert got.dtype == dtype and got.device == x.device, f"{got.dtype} on {got.device}"
    assert torch.equal(got, want)


@pytest.mark.clause("PT01.2", "PT01.3", "PT01.4")
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_any_small_batch_matches_the_per_row_slices(data):
    B = data.draw(st.integers(0, 4), label="B")
    T = data.draw(st.integers(0, 7), label="T")
    C = data.draw(st.integers(1, 3), label="C")
    width = data.draw(st.integers(0, T), label="width")
    starts = [data.draw(st.integers(0, T - width), label=f"starts[{b}]") for b in range(B)]
    x = seeded(B, T, C, seed=data.draw(st.integers(0, 2**16), label="seed"))

    check(x, starts, width, f"B={B}, T={T}, width={width}, starts={starts}")


def torch_calls(B: int) -> int:
    x, starts = seeded(B, 6, 2, seed=B), long([b % 4 for b in range(B)])
    with CountedCalls() as counter:  # in judge mode, counted by the worker
        drill.gather_windows(x, starts, 2)
    return counter.calls


@pytest.mark.clause("PT01.6")
@pytest.mark.parametrize("B", [9, 40])
def test_the_gather_does_not_loop_over_rows(B):
    small, large = torch_calls(2), torch_calls(B)

    assert large <= small, f"{small} torch calls for B=2, {large} for B={B}: a loop over rows"


@pytest.mark.clause("PT01.11")
@pytest.mark.parametrize("starts", [[0, 2], [1, 1]], ids=["mixed starts", "equal starts"])
def test_x_and_starts_are_only_read(starts):
    x, index = seeded(2, 5, 3, seed=8), long(starts)

    with inputs_untouched(x=x, starts=index):
        got = drill.gather_windows(x, index, 3)

    assert torch.equal(got, loop_windows(x, starts, 3))


@pytest.mark.clause("PT01.1")
def test_the_arguments_bind_by_name_in_the_kits_order():
    x, starts = seeded(2, 4, 2, seed=10), long([1, 0])
    assert_binds(drill.gather_windows, x, starts, 2)
    assert_binds(drill.gather_windows, width=2, starts=starts, x=x)
    by_name = drill.gather_windows(width=2, starts=starts, x=x)
    assert torch.equal(by_name, loop_windows(x, [1, 0], 2)), "called by name"
    assert torch.equal(drill.gather_windows(x, starts, 2), by_name), "called by position"


# ---- rejection: valid in every respect but one, before any work ----


def valid_call() -> dict[str, object]:
    return {"x": seeded(3, 6, 2, seed=11), "starts": long([0, 2, 1]), "width": 3}


def rejected(call: dict[str, object], errors, argument, values=()) -> None:
    tensors = {k: v for k, v in call.items() if isinstance(v, torch.Tensor) and not v.is_meta}
    with inputs_untouched(**tensors):
        assert_rejects(lambda: drill.gather_windows(**call), errors, argument, values=values)


@pytest.mark.clause("PT01.7")
@pytest.mark.parametrize("row", [1, 2])
def test_a_negative_start_in_a_later_row_is_rejected(row):
    call = valid_call()
    starts = [0, 2, 1]
    starts[row] = -1
    call["starts"] = long(starts)
    rejected(call, BAD_VALUE, "starts", values=[-1])


@pytest.mark.clause("PT01.8")
@pytest.mark.parametrize(("starts", "width"), [([0, 4, 1], 3), ([0, 1, 3], 4), ([0, 7, 0], 0)])
def test_a_window_past_the_end_in_a_later_row_is_rejected(starts, width):
    call = {**valid_call(), "starts": long(starts), "width": width}
    rejected(call, BAD_VALUE, ("starts", "width"))


@pytest.mark.clause("PT01.9")
@pytest.mark.parametrize(
    ("argument", "bad"),
    [
        ("starts", lambda: torch.tensor([0.0, 2.0, 1.0], device=test_device())),
        ("starts", lambda: torch.tensor([0.0, 2.5, 1.0], device=test_device())),
        ("starts", lambda: torch.tensor([True, False, True], device=test_device())),
        ("width", lambda: 3.0),
    ],
    ids=["float starts", "fractional starts", "bool starts", "float width"],
)
def test_non_integer_indices_are_rejected(argument, bad):
    call = {**valid_call(), argument: bad()}
    rejected(call, WRONG_KIND, argument)


def elsewhere() -> list[tuple[str, str]]:
    """(x's device, starts' device): a meta x on a CPU-only host, and any real other device."""
    pairs = [("meta", str(test_device()))]
    pairs += [(str(test_device()), str(other)) for other in other_devices(test_device())]
    return pairs


@pytest.mark.clause("PT01.10")
@pytest.mark.parametrize(("x_device", "starts_device"), elsewhere())
def test_starts_on_another_device_than_x_are_rejected(x_device, starts_device):
    call = valid_call()
    call["x"] = call["x"].to(x_device)  # type: ignore[union-attr]
    call["starts"] = call["starts"].to(starts_device)  # type: ignore[union-attr]
    rejected(call, BAD_VALUE, ("starts", "x"))
