"""Malformed arguments of chunked prefill and its split helper (this project's extension).

Each case is valid in every respect but one argument, generated from the entry point's
argument grammar: the wrong kind of object is a TypeError, a wrong value, shape, dtype
or device a ValueError, and the message names the argument. A given cache (and its
metadata) is compared bit for bit before and after every rejected call.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from gptlab_testkit import candidate, test_device
from gptlab_testkit.boundary import (
    INT64_MAX,
    INT64_MIN,
    assert_rejected_unchanged,
    assert_rejects,
    boundary_settings,
    extreme_ints,
    like,
    malformed_shapes,
    other_devices,
    wrong_dtypes,
    wrong_kind_for_int,
    wrong_kind_for_sequence,
    wrong_kind_for_tensor,
)
from gptlab_testkit.models import cache_aware_modules

cp = candidate("CHUNKED_PREFILL_MODULE")
MODULES = cache_aware_modules()

pytestmark = [pytest.mark.extension, pytest.mark.owner("chunked_prefill_validation")]

EXAMPLES = 60
MODEL = next(iter(MODULES.values())).make_test_model().to(test_device())
_ONE = torch.tensor([[1]], device=test_device())
VOCAB = MODEL(_ONE, _ONE * 0).logits.shape[-1]  # asked of the model, not assumed

# Two rows at different origins (row 1 is where per-row rules are spoiled), T = 5.
ORIGINS, T, PREFIX, CHUNK = (0, 3), 5, 2, 2


@dataclass(frozen=True)
class Case:
    """One argument replaced by a malformed value, and what the call must raise."""

    argument: str
    value: object
    error: type[Exception]


def cases(argument: str, values: st.SearchStrategy[object], error: type[Exception]):
    return values.map(lambda value: Case(argument, value, error))


def prompt():
    ids = torch.tensor([[3, 5, 7, 1, 2], [4, 6, 8, 9, 0]], device=test_device())
    positions = torch.tensor([[o + t for t in range(T)] for o in ORIGINS], device=test_device())
    return ids, positions


def cold_request():
    ids, positions = prompt()
    return {"model": MODEL, "input_ids": ids, "positions": positions, "chunk_size": CHUNK}


def warm_request():
    """The prompt's last T - PREFIX tokens after a cache of its first PREFIX tokens."""
    ids, positions = prompt()
    with torch.no_grad():
        prefix = MODEL(ids[:, :PREFIX], positions[:, :PREFIX], use_cache=True)
    return {
        "model": MODEL,
        "input_ids": ids[:, PREFIX:],
        "positions": positions[:, PREFIX:],
        "chunk_size": CHUNK,
        "past_key_values": prefix.past_key_values,
        "cache_lengths": prefix.cache_lengths,
        "cache_start_positions": prefix.cache_start_positions,
    }


def not_callable():
    return st.one_of(wrong_kind_for_tensor(), wrong_kind_for_sequence())


def row_one(base: torch.Tensor, row: list[int]) -> torch.Tensor:
    spoiled = base.clone()
    spoiled[1] = torch.tensor(row, device=base.device)
    return spoiled


def bad_position_rows(width: int, origin: int):
    """Row-1 positions: one column out of step, int64 wraparound, or an impossible origin."""
    base = [origin + index for index in range(width)]
    gap = st.tuples(st.integers(1, width - 1), st.sampled_from([1, -1, 3, 2**62])).map(
        lambda spoil: [v + (spoil[1] if index == spoil[0] else 0) for index, v in enumerate(base)]
    )
    wrapped = st.integers(1, width - 1).map(
        lambda column: [INT64_MAX - column + 1 + index for index in range(width)]
    )  # step 1 in int64 everywhere; column `column` is INT64_MIN
    shifted = st.sampled_from([-1, -width, INT64_MIN, 2**62, INT64_MAX - width + 1]).map(
        lambda start: [start + index for index in range(width)]
    )
    return st.one_of(
        gap, wrapped.map(lambda row: [v - 2**64 if v > INT64_MAX else v for v in row]), shifted
    )


def tensor_cases(name: str, tensor: torch.Tensor):
    """Kind, dtype, shape and device of a long [B, T] tensor."""
    devices = other_devices(tensor.device)
    return [
        cases(name, wrong_kind_for_tensor(), TypeError),
        cases(name, st.just(tensor.tolist()), TypeError),
        cases(name, wrong_dtypes(torch.long).map(lambda d: like(tensor, dtype=d)), ValueError),
        cases(
            name,
            malformed_shapes(tuple(tensor.shape)).map(lambda s: like(tensor, shape=s)),
            ValueError,
        ),
        *(
            [cases(name, st.sampled_from([like(tensor, device=d) for d in devices]), ValueError)]
            if devices
            else []
        ),
    ]


def request_cases(request):
    ids, positions = request["input_ids"], request["positions"]
    width, origin = ids.shape[1], int(positions[1, 0])
    bad_ids = st.sampled_from([-1, VOCAB, VOCAB + 1, 2**62, INT64_MAX, INT64_MIN])
    return [
        cases("model", not_callable(), TypeError),
        *tensor_cases("input_ids", ids),
        cases(
            "input_ids",
            st.tuples(st.integers(0, width - 1), bad_ids).map(
                lambda spoil: row_one(
                    ids, [spoil[1] if i == spoil[0] else int(v) for i, v in enumerate(ids[1])]
                )
            ),
            ValueError,
        ),
        *tensor_cases("positions", positions),
        cases(
            "positions",
            bad_position_rows(width, origin).map(lambda row: row_one(positions, row)),
            ValueError,
        ),
        cases("chunk_size", wrong_kind_for_int(), TypeError),
        cases("chunk_size", extreme_ints(minimum=1), ValueError),
    ]


def metadata_cases(name: str, tensor: torch.Tensor):
    """A [B] long metadata tensor: kind, dtype, shape, and row 1's value."""
    row_one_deltas = st.sampled_from([-1, 1, PREFIX + 1, 2**62, INT64_MIN])
    return [
        cases(
            name,
            st.one_of(wrong_kind_for_tensor(), st.just(tensor.tolist())).filter(
                lambda v: v is not None
            ),
            TypeError,
        ),
        cases(name, wrong_dtypes(torch.long).map(lambda d: like(tensor, dtype=d)), ValueError),
        cases(
            name,
            malformed_shapes(tuple(tensor.shape)).map(lambda s: like(tensor, shape=s)),
            ValueError,
        ),
        cases(
            name,
            row_one_deltas.map(lambda d: tensor + torch.tensor([0, d], device=tensor.device)),
            ValueError,
        ),
    ]


def cache_cases(request):
    past = request["past_key_values"]
    metadata = [
        *metadata_cases("cache_lengths", request["cache_lengths"]),
        *metadata_cases("cache_start_positions", request["cache_start_positions"]),
    ]
    missing = [
        cases(name, st.just(None), ValueError)
        for name in ("cache_lengths", "cache_start_positions")
    ]
    return [
        *missing,
        cases(
            "past_key_values", st.sampled_from([{"layers": past}, "past", 3, past[0][0]]), TypeError
        ),
        cases(
            "past_key_values",
            st.sampled_from([past[:-1], (*past, past[-1]), ((past[0][0],), *past[1:])]),
            ValueError,
        ),
        *metadata,
    ]


@boundary_settings(EXAMPLES)
@given(case=st.one_of(*request_cases(cold_request())))
def test_a_malformed_prompt_is_rejected_naming_the_argument(case):
    request = cold_request() | {case.argument: case.value}
    assert_rejects(lambda: cp.chunked_prefill(**request), case.error, case.argument)


@boundary_settings(EXAMPLES)
@given(case=st.one_of(*request_cases(warm_request()), *cache_cases(warm_request())))
def test_a_malformed_continuation_is_rejected_and_leaves_the_given_cache_alone(case):
    request = warm_request()
    given_cache = {
        name: request[name]
        for name in ("past_key_values", "cache_lengths", "cache_start_positions")
    }
    request[case.argument] = case.value
    assert_rejected_unchanged(
        given_cache, lambda: cp.chunked_prefill(**request), case.error, case.argument
    )


@pytest.mark.parametrize(
    "row", [[2, 9, 4, 5, 6], [INT64_MAX - 1, INT64_MAX, INT64_MIN, INT64_MIN + 1, INT64_MIN + 2]]
)
def test_the_issues_positions_are_rejected_on_the_second_row(row):
    request = cold_request()
    request["positions"] = row_one(request["positions"], row)
    assert_rejects(lambda: cp.chunked_prefill(**request), ValueError, "positions")


def split_cases():
    return st.one_of(
        cases("T", wrong_kind_for_int(), TypeError).map(lambda case: (case, 3)),
        # every extreme other than 0 is negative or needs more chunks than any prompt
        cases("T", extreme_ints(minimum=0, maximum=2**24), ValueError).map(lambda case: (case, 1)),
        cases("chunk_size", wrong_kind_for_int(), TypeError).map(lambda case: (case, 5)),
        cases("chunk_size", extreme_ints(minimum=1), ValueError).map(lambda case: (case, 5)),
    )


@boundary_settings(EXAMPLES)
@given(drawn=split_cases())
def test_a_malformed_split_is_rejected_naming_the_argument(drawn):
    case, other = drawn
    arguments = {"T": other, "chunk_size": other} | {case.argument: case.value}
    assert_rejects(lambda: cp.chunk_sizes_for(**arguments), case.error, case.argument)


def test_the_issues_negative_chunk_size_is_rejected():
    assert_rejects(lambda: cp.chunk_sizes_for(5, -1), ValueError, "chunk_size")


@boundary_settings(EXAMPLES)
@given(T=st.integers(0, 10_000), chunk_size=st.one_of(st.integers(1, 64), st.just(2**62)))
def test_every_valid_split_covers_the_prompt_in_ceil_chunks(T, chunk_size):
    sizes = cp.chunk_sizes_for(T, chunk_size)
    assert sum(sizes) == T and all(0 < size <= chunk_size for size in sizes)
    assert len(sizes) == -(-T // chunk_size)


def test_a_chunk_wider_than_any_prompt_is_one_call():
    with torch.no_grad():
        out = cp.chunked_prefill(**(cold_request() | {"chunk_size": 2**62}))
    assert out.chunk_sizes == (T,)
