"""Malformed arguments of chunked prefill and its split helper (this project's extension).

Each case is valid in every respect but one argument, generated from the entry point's
argument grammar (one hypothesis test per argument, so each gets its own budget): the
wrong kind of object is a TypeError, a wrong value, shape, dtype or device a
ValueError, and the message names the argument. A given cache (and its metadata) is
compared bit for bit before and after every rejected call.
"""

from __future__ import annotations

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
    malformed,
    not_callable,
    tensor_cases,
    wrong_kind_for_int,
)
from gptlab_testkit.models import cache_aware_modules

cp = candidate("CHUNKED_PREFILL_MODULE")
MODULES = cache_aware_modules()

pytestmark = [pytest.mark.extension, pytest.mark.owner("chunked_prefill_validation")]

EXAMPLES = 25  # per argument; most grammars are smaller and run out first
DEVICE = test_device()
MODEL = next(iter(MODULES.values())).make_test_model().to(DEVICE)
_ONE = torch.tensor([[1]], device=DEVICE)
VOCAB = MODEL(_ONE, _ONE * 0).logits.shape[-1]  # asked of the model, not assumed

# Two rows at different origins (row 1 is where per-row rules are spoiled), T = 5.
ORIGINS, T, PREFIX, CHUNK = (0, 3), 5, 2, 2
CACHE = ("past_key_values", "cache_lengths", "cache_start_positions")


def prompt():
    ids = torch.tensor([[3, 5, 7, 1, 2], [4, 6, 8, 9, 0]], device=DEVICE)
    positions = torch.tensor([[o + t for t in range(T)] for o in ORIGINS], device=DEVICE)
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
        **{name: getattr(prefix, name) for name in CACHE},
    }


def row_one(base: torch.Tensor, row: list[int]) -> torch.Tensor:
    spoiled = base.clone()
    spoiled[1] = torch.tensor(row, device=base.device)
    return spoiled


def bad_position_rows(base: list[int]):
    """Row-1 positions: one column out of step, int64 wraparound, or an impossible origin."""
    width = len(base)
    gap = st.tuples(st.integers(1, width - 1), st.sampled_from([1, -1, 3, 2**62])).map(
        lambda spoil: [v + (spoil[1] if index == spoil[0] else 0) for index, v in enumerate(base)]
    )
    # Step 1 in int64 arithmetic at every column; column `c` is where it wraps to INT64_MIN.
    wrapped = st.integers(1, width - 1).map(
        lambda c: [(INT64_MAX - c + 1 + i + 2**63) % 2**64 - 2**63 for i in range(width)]
    )
    shifted = st.sampled_from([-1, -width, INT64_MIN, 2**62, INT64_MAX - width + 1]).map(
        lambda start: [start + index for index in range(width)]
    )
    return st.one_of(gap, wrapped, shifted)


def prompt_grammar(request):
    ids, positions = request["input_ids"], request["positions"]
    bad_ids = st.sampled_from([-1, VOCAB, VOCAB + 1, 2**62, INT64_MAX, INT64_MIN])
    spoiled_ids = st.tuples(st.integers(0, ids.shape[1] - 1), bad_ids).map(
        lambda spoil: row_one(
            ids, [spoil[1] if i == spoil[0] else v for i, v in enumerate(ids[1].tolist())]
        )
    )
    position_rows = bad_position_rows(positions[1].tolist())
    return {
        "model": [malformed("model", not_callable(), TypeError)],
        "input_ids": [
            *tensor_cases("input_ids", ids),
            malformed("input_ids", spoiled_ids, ValueError),
        ],
        "positions": [
            *tensor_cases("positions", positions),
            malformed("positions", position_rows.map(lambda r: row_one(positions, r)), ValueError),
        ],
        "chunk_size": [
            malformed("chunk_size", wrong_kind_for_int(), TypeError),
            malformed("chunk_size", extreme_ints(minimum=1), ValueError),
        ],
    }


def metadata_grammar(name: str, tensor: torch.Tensor):
    """A [B] long metadata tensor: kind, dtype, shape, absent, and row 1's value."""
    deltas = st.sampled_from([-1, 1, PREFIX + 1, 2**62, INT64_MIN])
    return [
        *tensor_cases(name, tensor, optional=True),
        malformed(name, st.just(None), ValueError),  # a cache without this metadata
        malformed(
            name,
            deltas.map(lambda d: tensor + torch.tensor([0, d], device=tensor.device)),
            ValueError,
        ),
    ]


def cache_grammar(request):
    past = request["past_key_values"]
    return {
        "past_key_values": [
            malformed(
                "past_key_values",
                st.sampled_from([{"layers": past}, "past", 3, past[0][0]]),
                TypeError,
            ),
            malformed(
                "past_key_values",
                st.sampled_from([past[:-1], (*past, past[-1]), ((past[0][0],), *past[1:])]),
                ValueError,
            ),
        ],
        "cache_lengths": metadata_grammar("cache_lengths", request["cache_lengths"]),
        "cache_start_positions": metadata_grammar(
            "cache_start_positions", request["cache_start_positions"]
        ),
    }


COLD = prompt_grammar(cold_request())
WARM = prompt_grammar(warm_request()) | cache_grammar(warm_request())


@pytest.mark.parametrize("argument", list(COLD))
@boundary_settings(EXAMPLES)
@given(data=st.data())
def test_a_malformed_prompt_is_rejected_naming_the_argument(argument, data):
    case = data.draw(st.one_of(*COLD[argument]), label=argument)
    request = cold_request() | {case.argument: case.value}
    assert_rejects(lambda: cp.chunked_prefill(**request), case.error, case.argument)


@pytest.mark.parametrize("argument", list(WARM))
@boundary_settings(EXAMPLES)
@given(data=st.data())
def test_a_malformed_continuation_is_rejected_and_leaves_the_given_cache_alone(argument, data):
    case = data.draw(st.one_of(*WARM[argument]), label=argument)
    request = warm_request()
    given_cache = {name: request[name] for name in CACHE}
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


SPLIT = {  # each argument's cases, with the other argument's valid value
    "T": [
        malformed("T", wrong_kind_for_int(), TypeError).map(lambda case: (case, 3)),
        # every extreme other than 0 is negative or needs more chunks than any prompt
        malformed("T", extreme_ints(minimum=0, maximum=2**24), ValueError).map(
            lambda case: (case, 1)
        ),
    ],
    "chunk_size": [
        malformed("chunk_size", wrong_kind_for_int(), TypeError).map(lambda case: (case, 5)),
        malformed("chunk_size", extreme_ints(minimum=1), ValueError).map(lambda case: (case, 5)),
    ],
}


@pytest.mark.parametrize("argument", list(SPLIT))
@boundary_settings(EXAMPLES)
@given(data=st.data())
def test_a_malformed_split_is_rejected_naming_the_argument(argument, data):
    case, other = data.draw(st.one_of(*SPLIT[argument]), label=argument)
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
