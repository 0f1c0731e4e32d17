"""P06 gather_last_token(hidden [B, T, C], lengths [B]) -> [B, C] = hidden[b, lengths[b] - 1]."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from gptlab_testkit import assert_rejects, candidate, shares_storage, test_device
from gptlab_testkit.oracles import CountedCalls, assert_binds, inputs_untouched, seeded

drill = candidate("DRILL_P06_MODULE")

pytestmark = [pytest.mark.owner("p06"), pytest.mark.contract]


def long(values: list[int], dtype=torch.long) -> torch.Tensor:
    return torch.tensor(values, dtype=dtype, device=test_device())


def loop_last(hidden: torch.Tensor, lengths: list[int]) -> torch.Tensor:
    return torch.stack([hidden[b, length - 1] for b, length in enumerate(lengths)])


@pytest.mark.clause("P06.2", "P06.4")
def test_mixed_lengths_pick_each_rows_last_valid_token():
    hidden = seeded(3, 5, 4, seed=1)
    lengths = [5, 2, 3]

    # the oracle first: the call's writes cannot reach it
    want = loop_last(hidden, lengths)
    got = drill.gather_last_token(hidden, long(lengths))

    assert got.shape == (3, 4)
    assert torch.equal(got, want), "vs row-by-row oracle"


@pytest.mark.clause("P06.4")
def test_length_one_picks_the_first_token_not_the_last_pad():
    hidden = seeded(2, 4, 3, seed=2)

    # the oracle first: the call's writes cannot reach it
    hidden_given = hidden.clone()
    got = drill.gather_last_token(hidden, long([4, 1]))

    assert torch.equal(got[1], hidden_given[1, 0]), "row 1 with one valid token"


@pytest.mark.clause("P06.5")
def test_a_row_reads_nothing_from_other_rows():
    hidden = seeded(3, 4, 2, seed=3)
    lengths = long([2, 4, 1])
    poisoned = hidden.clone()
    poisoned[0], poisoned[2] = 1e6, -1e6  # rows 0 and 2 change entirely

    got = drill.gather_last_token(poisoned, lengths)

    assert torch.equal(got[1], hidden[1, 3]), "row 1 depends on other rows"


@pytest.mark.clause("P06.5")
def test_padding_past_the_length_is_never_read():
    hidden = seeded(2, 6, 3, seed=4)
    lengths = [3, 5]
    poisoned = hidden.clone()
    for b, length in enumerate(lengths):
        poisoned[b, length:] = float("nan")

    got = drill.gather_last_token(poisoned, long(lengths))

    assert torch.equal(got, loop_last(hidden, lengths)), "padding leaked into the result"


@pytest.mark.clause("P06.2", "P06.3", "P06.4")
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_any_small_batch_matches_the_loop_oracle(data):
    B = data.draw(st.integers(1, 4), label="B")
    T = data.draw(st.integers(1, 6), label="T")
    C = data.draw(st.integers(1, 3), label="C")
    lengths = [data.draw(st.integers(1, T), label=f"lengths[{b}]") for b in range(B)]
    dtype = data.draw(st.sampled_from([torch.int64, torch.int32]), label="lengths dtype")
    hidden = seeded(B, T, C, seed=data.draw(st.integers(0, 2**16), label="seed"))

    # the oracle first: the call's writes cannot reach it
    want = loop_last(hidden, lengths)
    got = drill.gather_last_token(hidden, long(lengths, dtype))

    assert got.shape == (B, C) and torch.equal(got, want)


def torch_calls(B: int) -> int:
    hidden, lengths = seeded(B, 4, 2, seed=B), long([(b % 4) + 1 for b in range(B)])
    with CountedCalls() as counter:  # in judge mode, counted by the worker
        drill.gather_last_token(hidden, lengths)
    return counter.calls


@pytest.mark.clause("P06.6")
@pytest.mark.parametrize("B", [9, 40])
def test_the_gather_does_not_loop_over_rows(B):
    # A vectorised gather makes as many torch calls for B rows as for 2.
    small, large = torch_calls(2), torch_calls(B)

    assert large <= small, f"{small} torch calls for B=2, {large} for B={B}: a loop over rows"


@pytest.mark.clause("P06.11")
@pytest.mark.parametrize("values", [[3, 1], [3, 3], [1, 1]], ids=str)
def test_the_result_is_a_new_tensor_and_the_inputs_are_unchanged(values):
    hidden, lengths = seeded(2, 3, 4, seed=5), long(values)

    with inputs_untouched(hidden=hidden, lengths=lengths):
        got = drill.gather_last_token(hidden, lengths)
        # in judge mode the storages are the worker's, as it reported them
        assert not shares_storage(got, hidden), "the result is a view of hidden"
        with torch.inference_mode():
            got.fill_(7.0)


@pytest.mark.clause("P06.3")
def test_half_precision_keeps_its_dtype():
    hidden = seeded(2, 3, 4, seed=6, dtype=torch.float16)

    # the oracle first: the call's writes cannot reach it
    want = loop_last(hidden, [2, 3])
    got = drill.gather_last_token(hidden, long([2, 3]))

    assert got.dtype == torch.float16 and torch.equal(got, want)


# ---- rejection: valid in every respect but one, before any work ----


@pytest.mark.parametrize(
    ("case", "bad_lengths"), [("zero in row 1", [3, 0, 2]), ("past T in row 1", [3, 5, 2])]
)
@pytest.mark.clause("P06.7")
def test_a_length_outside_one_to_t_is_rejected(case, bad_lengths):
    hidden, lengths = seeded(3, 4, 2, seed=7), long(bad_lengths)
    with inputs_untouched(hidden=hidden, lengths=lengths):
        assert_rejects(
            lambda: drill.gather_last_token(hidden, lengths),
            ValueError,
            "lengths",
            values=bad_lengths[1:2],
        )


@pytest.mark.clause("P06.5")
@pytest.mark.parametrize("pad", [float("inf"), float("-inf"), float("nan")], ids=str)
def test_a_non_finite_pad_in_a_later_row_changes_nothing(pad):
    hidden = seeded(3, 4, 2, seed=10)
    lengths = [4, 2, 1]
    poisoned = hidden.clone()
    poisoned[1, 2:] = pad
    poisoned[2, 1:] = pad

    got = drill.gather_last_token(poisoned, long(lengths))

    assert torch.equal(got, loop_last(hidden, lengths)), f"a {pad} pad leaked into the result"


@pytest.mark.clause("P06.3")
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_the_result_keeps_hiddens_dtype_and_device_with_int32_lengths(dtype):
    hidden = seeded(3, 4, 2, seed=13, dtype=dtype)

    # the oracle first: the call's writes cannot reach it
    want = loop_last(hidden, [1, 4, 2])
    got = drill.gather_last_token(hidden, long([1, 4, 2], torch.int32))

    assert got.dtype == dtype and got.device == hidden.device, f"{got.dtype} on {got.device}"
    assert torch.equal(got, want)


@pytest.mark.clause("P06.1")
def test_hidden_and_lengths_are_positional():
    hidden, lengths = seeded(1, 2, 2, seed=14), long([2])

    assert_binds(drill.gather_last_token, hidden, lengths)
    assert torch.equal(drill.gather_last_token(hidden, lengths), hidden[:, 1])
