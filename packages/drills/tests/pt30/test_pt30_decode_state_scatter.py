"""PT30 apply_decode_step_(state, scheduled_rows [N], sampled_tokens [N], finished [N]):
the state is a dict of tokens [R, C], lengths [R], done [R], last_tokens [R], updated in place."""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import BAD_VALUE, assert_rejects, candidate, test_device
from gptlab_testkit.oracles import assert_binds, inputs_untouched

drill = candidate("DRILL_PT30_MODULE")

pytestmark = [pytest.mark.owner("pt30"), pytest.mark.contract]

FIELDS = ("tokens", "lengths", "done", "last_tokens")


def ints(values, dtype: torch.dtype = torch.long) -> torch.Tensor:
    return torch.tensor(values, dtype=dtype, device=test_device())


def flags(values) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.bool, device=test_device())


def make_state(lengths: list[int], C: int = 6, dtype: torch.dtype = torch.long):
    """Row r holds tokens 100 r + t up to its length and -1 after it; every row differs."""
    R = len(lengths)
    tokens = [[100 * r + t if t < n else -1 for t in range(C)] for r, n in enumerate(lengths)]
    return {
        "tokens": ints(tokens, dtype).reshape(R, C),
        "lengths": ints(lengths),
        "done": flags([r % 3 == 2 for r in range(R)]),
        "last_tokens": ints([100 * r + n - 1 if n else -1 for r, n in enumerate(lengths)], dtype),
    }


def copied(state):
    return {name: state[name].clone() for name in FIELDS}


def loop_step(state, rows: list[int], sampled: list[int], finished: list[bool]):
    """The expected state: one scheduled row at a time, on a copy."""
    want = {name: state[name].tolist() for name in FIELDS}
    for r, token, now in zip(rows, sampled, finished, strict=True):
        want["tokens"][r][want["lengths"][r]] = token
        want["lengths"][r] += 1
        want["last_tokens"][r] = token
        want["done"][r] = want["done"][r] or now
    return want


def check(state, rows: list[int], sampled: list[int], finished: list[bool], what: str):
    want = loop_step(state, rows, sampled, finished)
    before = copied(state)
    drill.apply_decode_step_(state, ints(rows), ints(sampled), flags(finished))
    for name in FIELDS:
        got = state[name]
        assert got.shape == before[name].shape and got.dtype == before[name].dtype, (
            f"{what}: state {name} is now {tuple(got.shape)} {got.dtype}"
        )
        assert got.tolist() == want[name], f"{what}: state {name} {got.tolist()}, want {want[name]}"
    return before


@pytest.mark.clause("PT30.2", "PT30.3")
def test_scheduled_rows_append_their_token_and_the_others_are_untouched():
    state = make_state([3, 1, 4, 2, 0])
    check(state, [1, 3], [17, 18], [False, False], "rows 1 and 3")


@pytest.mark.clause("PT30.2")
@pytest.mark.parametrize("rows", [[4, 0, 2], [2, 4, 0]], ids=["descending", "mixed"])
def test_unordered_rows_take_their_own_tokens(rows):
    state = make_state([3, 1, 4, 2, 0])
    check(state, rows, [51, 52, 53], [False, False, False], f"rows {rows}")


@pytest.mark.clause("PT30.3")
def test_unscheduled_rows_are_identical_byte_for_byte():
    state = make_state([3, 1, 4, 2, 0])
    before = check(state, [2], [99], [True], "row 2 alone")
    for name in FIELDS:
        for r in (0, 1, 3, 4):
            got, was = state[name][r], before[name][r]
            assert got.cpu().numpy().tobytes() == was.cpu().numpy().tobytes(), f"{name}[{r}]"


@pytest.mark.clause("PT30.4")
@pytest.mark.parametrize("lengths", [[3, 1, 4], [0, 0, 0, 0, 6]], ids=["three rows", "five rows"])
def test_no_scheduled_rows_changes_nothing(lengths):
    state = make_state(lengths)
    check(state, [], [], [], f"N = 0, lengths {lengths}")


@pytest.mark.clause("PT30.5")
def test_rows_finishing_now_are_marked_done_and_the_others_keep_their_flag():
    state = make_state([3, 1, 4, 2, 0, 1])  # done: rows 2 and 5
    check(state, [0, 3, 4], [7, 8, 9], [True, False, True], "rows 0 and 4 finish")
    assert state["done"].tolist() == [True, False, True, False, True, True]


@pytest.mark.clause("PT30.2", "PT30.6")
def test_a_row_may_fill_its_last_free_slot():
    state = make_state([5, 6, 2], C=6)
    check(state, [0, 2], [41, 42], [False, False], "row 0 reaches capacity")
    assert state["lengths"].tolist() == [6, 6, 3]


@pytest.mark.clause("PT30.2")
@pytest.mark.parametrize("dtype", [torch.int32, torch.int64], ids=str)
def test_the_fields_keep_their_dtype_and_shape(dtype):
    state = make_state([2, 0, 3], dtype=dtype)
    check(state, [2, 0], [61, 62], [False, True], f"{dtype} tokens")


@pytest.mark.clause("PT30.2", "PT30.3", "PT30.5")
@pytest.mark.parametrize("seed", [3, 4, 5])
def test_random_steps_match_the_row_loop(seed):
    generator = torch.Generator().manual_seed(seed)
    R, C = 8, 5
    lengths = torch.randint(0, C, (R,), generator=generator).tolist()
    N = int(torch.randint(0, R + 1, (1,), generator=generator))
    rows = torch.randperm(R, generator=generator)[:N].tolist()
    sampled = torch.randint(0, 1000, (N,), generator=generator).tolist()
    finished = (torch.rand(N, generator=generator) < 0.5).tolist()
    check(make_state(lengths, C), rows, sampled, finished, f"seed {seed}: rows {rows}")


@pytest.mark.clause("PT30.1")
def test_the_arguments_bind_by_name_in_the_kits_order():
    state = make_state([1, 2])
    rows, sampled, finished = ints([1]), ints([5]), flags([False])
    assert_binds(drill.apply_decode_step_, state, rows, sampled, finished)
    assert_binds(drill.apply_decode_step_, finished=finished, sampled_tokens=sampled,
                 scheduled_rows=rows, state=state)  # fmt: skip
    drill.apply_decode_step_(finished=finished, sampled_tokens=sampled, scheduled_rows=rows,
                             state=state)  # fmt: skip
    assert state["tokens"][1, 2].item() == 5 and state["lengths"].tolist() == [1, 3]


# ---- rejection: valid in every respect but one, before any write (atomic) ----


def rejected(lengths, rows, sampled, finished, arguments, values=(), C: int = 6) -> None:
    state = make_state(lengths, C)
    call = (state, ints(rows), ints(sampled), flags(finished))
    with inputs_untouched(**state, rows=call[1], sampled=call[2], finished=call[3]):
        assert_rejects(lambda: drill.apply_decode_step_(*call), BAD_VALUE, arguments, values=values)


@pytest.mark.clause("PT30.6")
@pytest.mark.parametrize("full_row", [0, 2], ids=["scheduled first", "scheduled last"])
def test_a_full_row_is_rejected_before_any_row_is_written(full_row):
    lengths = [2, 1, 4, 3]
    lengths[full_row] = 4  # capacity 4
    rejected(lengths, [full_row, 1, 3] if full_row == 0 else [1, 3, 2], [5, 6, 7],
             [False, True, False], ("state", "scheduled_rows", "tokens"), values=[full_row],
             C=4)  # fmt: skip


@pytest.mark.clause("PT30.7")
@pytest.mark.parametrize("rows", [[1, 3, 1], [0, 2, 3, 2], [4, 4]], ids=str)
def test_duplicate_rows_are_rejected_before_any_row_is_written(rows):
    repeated = next(r for r in rows if rows.count(r) > 1)
    N = len(rows)
    rejected([1, 2, 0, 3, 1], rows, list(range(N)), [False] * N, "scheduled_rows",
             values=[repeated])  # fmt: skip


@pytest.mark.clause("PT30.8")
@pytest.mark.parametrize(
    ("sampled", "finished", "argument"),
    [([5, 6], [False, False, True], "sampled_tokens"),
     ([5, 6, 7, 8], [False] * 3, "sampled_tokens"),
     ([5, 6, 7], [False, True], "finished"), ([5, 6, 7], [True] * 4, "finished")],
    ids=["short tokens", "long tokens", "short flags", "long flags"],
)  # fmt: skip
def test_inconsistent_field_lengths_are_rejected_before_any_row_is_written(
    sampled, finished, argument
):
    rejected([1, 2, 0, 3], [2, 0, 3], sampled, finished, (argument, "scheduled_rows"))
