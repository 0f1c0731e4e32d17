"""Rejected input: a ValueError naming the argument, raised before anything changes.

Every malformed case is valid in every respect but one. Each rejected call must
leave the pool, the counters, the block tables and the lengths exactly as they were.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

from gptlab_testkit import candidate, test_device

pkv = candidate("PAGED_KV_MODULE")

pytestmark = [pytest.mark.owner("paged_kv_validation"), pytest.mark.contract]

GOOD_SIZES = {"layer_count": 2, "head_count": 2, "head_dim": 3, "num_blocks": 8, "block_size": 4}


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("layer_count", 0),
        ("head_count", True),
        ("head_dim", -1),
        ("num_blocks", 2.0),
        ("block_size", "4"),
    ],
)
def test_constructor_rejects_a_size_that_is_not_a_positive_int(name, value):
    with pytest.raises(ValueError, match=name):
        pkv.PagedKVCache(**{**GOOD_SIZES, name: value}, device=test_device())


def test_constructor_rejects_a_non_floating_dtype():
    with pytest.raises(ValueError, match="dtype"):
        pkv.PagedKVCache(**GOOD_SIZES, dtype=torch.long, device=test_device())


@pytest.fixture
def busy(pool):
    """Two requests: "a" (6 tokens from start 1) and "b" (a fork of "a" plus one token)."""
    pool.admit("a", [1, 2, 3, 4, 5, 6], start=1)
    pool.append({"a": [1, 2, 3, 4, 5, 6]})
    pool.fork("a", "b")
    pool.append({"b": [7]})
    return pool


def state_of(pool) -> tuple:
    cache = pool.cache
    return (
        [t.clone() for pair in cache.storage for t in pair],
        pool.counts(),
        {rid: (cache.block_table(rid), cache.cache_length(rid)) for rid in ("a", "b")},
        [cache.ref_count(block) for block in range(pool.num_blocks)],
    )


def assert_unchanged(pool, before: tuple) -> None:
    after = state_of(pool)
    for index, (now, was) in enumerate(zip(after[0], before[0], strict=True)):
        assert torch.equal(now, was), f"storage tensor {index} was written by a rejected call"
    assert after[1:] == before[1:], "counters, tables or reference counts changed"


def kv(tokens: int, rows: int = 1, *, layers: int = 2, heads: int = 2, dtype=torch.float32):
    return tuple(
        (
            torch.ones(rows, heads, tokens, 3, dtype=dtype, device=test_device()),
            torch.ones(rows, heads, tokens, 3, dtype=dtype, device=test_device()),
        )
        for _ in range(layers)
    )


def long(rows: list[list[int]]) -> torch.Tensor:
    return torch.tensor(rows, dtype=torch.long, device=test_device())


# "a" holds 6 tokens from start 1: its next position is 7.
BAD_APPENDS: dict[str, tuple[Callable[[], tuple], str]] = {
    "unknown request": (lambda: (["zzz"], long([[1]]), long([[7]]), kv(1)), "request_id"),
    "repeated request": (
        lambda: (["a", "a"], long([[1], [1]]), long([[7], [7]]), kv(1, 2)),
        "request_ids",
    ),
    "float token ids": (lambda: (["a"], long([[1]]).float(), long([[7]]), kv(1)), "token_ids"),
    "token ids of another row count": (
        lambda: (["a"], long([[1], [1]]), long([[7]]), kv(1)),
        "token_ids",
    ),
    "negative token id": (lambda: (["a"], long([[-1]]), long([[7]]), kv(1)), "token_ids"),
    "position gap": (lambda: (["a"], long([[1]]), long([[8]]), kv(1)), "position"),
    "rewrite of a stored position": (lambda: (["a"], long([[1]]), long([[6]]), kv(1)), "position"),
    "positions of another length": (
        lambda: (["a"], long([[1]]), long([[7, 8]]), kv(1)),
        "positions",
    ),
    "too few layers": (
        lambda: (["a"], long([[1]]), long([[7]]), kv(1, layers=1)),
        "past_key_values",
    ),
    "wrong head count": (
        lambda: (["a"], long([[1]]), long([[7]]), kv(1, heads=3)),
        "past_key_values",
    ),
    "wrong token count": (lambda: (["a"], long([[1]]), long([[7]]), kv(2)), "past_key_values"),
    "wrong dtype": (
        lambda: (["a"], long([[1]]), long([[7]]), kv(1, dtype=torch.float64)),
        "past_key_values",
    ),
}


@pytest.mark.parametrize("case", list(BAD_APPENDS))
def test_append_rejects_malformed_input_before_any_write(busy, case):
    make_args, match = BAD_APPENDS[case]
    before = state_of(busy)

    with pytest.raises(ValueError, match=match):
        busy.cache.append(*make_args())

    assert_unchanged(busy, before)


BAD_ADMITS: dict[str, tuple[dict, str]] = {
    "open request id": ({"request_id": "a"}, "request_id"),
    "no tokens": ({"token_ids": []}, "token_ids"),
    "negative token": ({"token_ids": [1, -2]}, "token_ids"),
    "not a namespace": ({"namespace": ("m", "c")}, "namespace"),
    "negative start": ({"start_position": -1}, "start_position"),
    "fractional start": ({"start_position": 1.5}, "start_position"),
}


@pytest.mark.parametrize("case", list(BAD_ADMITS))
def test_admit_rejects_malformed_input_before_any_change(busy, case):
    change, match = BAD_ADMITS[case]
    args = {
        "request_id": "new",
        "token_ids": [1, 2, 3, 4, 5],
        "namespace": pkv.PagedNamespace("m", "c"),
        "start_position": 1,
        **change,
    }
    before = state_of(busy)

    with pytest.raises(ValueError, match=match):
        busy.cache.admit(**args)

    assert_unchanged(busy, before)
    assert "new" not in getattr(busy.cache, "request_ids", ())


@pytest.mark.parametrize(
    "call",
    [
        lambda cache: cache.fork("zzz", "c"),
        lambda cache: cache.fork("a", "b"),
        lambda cache: cache.free("zzz"),
        lambda cache: cache.ref_count(-1),
        lambda cache: cache.ref_count(8),
        lambda cache: cache.slot_mapping("a", [0]),  # before the start (1)
        lambda cache: cache.slot_mapping("a", [9]),  # past a's two blocks (positions 1..8)
        lambda cache: cache.model_inputs(["zzz"]),
        lambda cache: cache.model_inputs([]),
    ],
    ids=[
        "fork of unknown parent",
        "fork onto an open id",
        "free of unknown id",
        "negative block",
        "block past the pool",
        "slot before the start",
        "slot past the blocks",
        "model inputs of unknown id",
        "model inputs of no request",
    ],
)
def test_other_calls_reject_unknown_ids_and_out_of_range_values(busy, call):
    before = state_of(busy)

    with pytest.raises(ValueError):
        call(busy.cache)

    assert_unchanged(busy, before)
