"""Rejected input: a ValueError naming the argument, raised before anything changes.

Every malformed case is valid in every respect but one. Each rejected call must
leave the pool, the counters, the block tables and the lengths exactly as they were.
A contract test accepts any message naming what is wrong (docs/contracts.md): the
parameter with underscores or spaces, or the offending value; the extension tests
below require this project's wording (the parameter's identifier).

The contract's rejections (README, "Contract") are graded: sizes that are not positive,
unknown, repeated or open ids, empty or negative token ids, shapes, positions that are
not each row's next, a negative start, out-of-range blocks and slots. Arguments of
another kind (a bool, float or str size, a float start, a tuple for a namespace) and
tensors of another dtype are this project's extension: refused by the reference,
never graded.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

from gptlab_testkit import candidate, test_device
from gptlab_testkit.messages import what_is_wrong

pkv = candidate("PAGED_KV_MODULE")

pytestmark = [pytest.mark.owner("paged_kv_validation")]

GOOD_SIZES = {"layer_count": 2, "head_count": 2, "head_dim": 3, "num_blocks": 8, "block_size": 4}


BAD_SIZES = [("layer_count", 0), ("head_dim", -1)]
# Sizes of another kind: this project's rule (an argument kind), not the contract's.
SIZES_OF_ANOTHER_KIND = [("head_count", True), ("num_blocks", 2.0), ("block_size", "4")]


@pytest.mark.contract
@pytest.mark.rejection
@pytest.mark.parametrize(("name", "value"), BAD_SIZES)
def test_constructor_rejects_a_size_that_is_not_positive(name, value):
    with pytest.raises(ValueError, match=what_is_wrong(name, values=[value])):
        pkv.PagedKVCache(**{**GOOD_SIZES, name: value}, device=test_device())


@pytest.mark.extension
@pytest.mark.parametrize(("name", "value"), SIZES_OF_ANOTHER_KIND)
def test_constructor_rejects_a_size_of_another_kind(name, value):
    with pytest.raises(ValueError, match=what_is_wrong(name, values=[value])):
        pkv.PagedKVCache(**{**GOOD_SIZES, name: value}, device=test_device())


@pytest.mark.extension
@pytest.mark.parametrize(("name", "value"), BAD_SIZES + SIZES_OF_ANOTHER_KIND)
def test_constructor_message_uses_the_parameter_identifier(name, value):
    with pytest.raises(ValueError, match=name):
        pkv.PagedKVCache(**{**GOOD_SIZES, name: value}, device=test_device())


@pytest.mark.extension
def test_constructor_rejects_a_non_floating_dtype():
    with pytest.raises(ValueError, match=what_is_wrong("dtype", values=[torch.long])):
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


def shape(*sizes: int) -> list[object]:
    """An offending shape, as a message may print it (a tuple or a torch.Size)."""
    return [sizes, torch.Size(sizes), list(sizes)]


# "a" holds 6 tokens from start 1: its next position is 7.
# case -> (arguments, names that name what is wrong (this project's message uses the
# first), offending values a message may print instead)
BAD_APPENDS: dict[str, tuple[Callable[[], tuple], str | tuple[str, ...], list[object]]] = {
    "unknown request": (
        lambda: (["zzz"], long([[1]]), long([[7]]), kv(1)),
        ("request_id", "request_ids"),
        ["zzz"],
    ),
    "repeated request": (
        lambda: (["a", "a"], long([[1], [1]]), long([[7], [7]]), kv(1, 2)),
        ("request_ids", "request_id"),
        ["a"],
    ),
    "token ids of another row count": (
        lambda: (["a"], long([[1], [1]]), long([[7]]), kv(1)),
        "token_ids",
        shape(2, 1),
    ),
    "negative token id": (
        lambda: (["a"], long([[-1]]), long([[7]]), kv(1)),
        "token_ids",
        [-1],
    ),
    "position gap": (lambda: (["a"], long([[1]]), long([[8]]), kv(1)), "positions", [8]),
    "rewrite of a stored position": (
        lambda: (["a"], long([[1]]), long([[6]]), kv(1)),
        "positions",
        [6],
    ),
    "positions of another length": (
        lambda: (["a"], long([[1]]), long([[7, 8]]), kv(1)),
        "positions",
        shape(1, 2),
    ),
    "too few layers": (
        lambda: (["a"], long([[1]]), long([[7]]), kv(1, layers=1)),
        ("past_key_values", "layer_count"),
        [1],
    ),
    "wrong head count": (
        lambda: (["a"], long([[1]]), long([[7]]), kv(1, heads=3)),
        ("past_key_values", "head_count"),
        [3, *shape(1, 3, 1, 3)],
    ),
    "wrong token count": (
        lambda: (["a"], long([[1]]), long([[7]]), kv(2)),
        "past_key_values",
        shape(1, 2, 2, 3),
    ),
}
# Tensors of another dtype: this project's rule, not the contract's.
APPENDS_OF_ANOTHER_DTYPE: dict[
    str, tuple[Callable[[], tuple], str | tuple[str, ...], list[object]]
] = {
    "float token ids": (
        lambda: (["a"], long([[1]]).float(), long([[7]]), kv(1)),
        "token_ids",
        [torch.float32],
    ),
    "wrong dtype": (
        lambda: (["a"], long([[1]]), long([[7]]), kv(1, dtype=torch.float64)),
        ("past_key_values", "dtype"),
        [torch.float64],
    ),
}


def names_of(named: str | tuple[str, ...]) -> tuple[str, ...]:
    return (named,) if isinstance(named, str) else named


def append_rejects_before_any_write(busy, make_args, named, values) -> None:
    before = state_of(busy)

    with pytest.raises(ValueError, match=what_is_wrong(*names_of(named), values=values)):
        busy.cache.append(*make_args())

    assert_unchanged(busy, before)


@pytest.mark.contract
@pytest.mark.rejection
@pytest.mark.parametrize("case", list(BAD_APPENDS))
def test_append_rejects_malformed_input_before_any_write(busy, case):
    append_rejects_before_any_write(busy, *BAD_APPENDS[case])


@pytest.mark.extension
@pytest.mark.parametrize("case", list(APPENDS_OF_ANOTHER_DTYPE))
def test_append_rejects_tensors_of_another_dtype_before_any_write(busy, case):
    append_rejects_before_any_write(busy, *APPENDS_OF_ANOTHER_DTYPE[case])


@pytest.mark.extension
@pytest.mark.parametrize("case", list(BAD_APPENDS) + list(APPENDS_OF_ANOTHER_DTYPE))
def test_append_message_uses_the_parameter_identifier(busy, case):
    make_args, named, _ = {**BAD_APPENDS, **APPENDS_OF_ANOTHER_DTYPE}[case]
    with pytest.raises(ValueError, match=names_of(named)[0]):
        busy.cache.append(*make_args())


BAD_ADMITS: dict[str, tuple[dict, str, list[object]]] = {
    "open request id": ({"request_id": "a"}, "request_id", ["a"]),
    "no tokens": ({"token_ids": []}, "token_ids", [[]]),
    "negative token": ({"token_ids": [1, -2]}, "token_ids", [-2]),
    "negative start": ({"start_position": -1}, "start_position", [-1]),
}
# Arguments of another kind: this project's rule, not the contract's.
ADMITS_OF_ANOTHER_KIND: dict[str, tuple[dict, str, list[object]]] = {
    "not a namespace": ({"namespace": ("m", "c")}, "namespace", [("m", "c")]),
    "fractional start": ({"start_position": 1.5}, "start_position", [1.5]),
}


def admit_args(change: dict) -> dict:
    return {
        "request_id": "new",
        "token_ids": [1, 2, 3, 4, 5],
        "namespace": pkv.PagedNamespace("m", "c"),
        "start_position": 1,
        **change,
    }


def admit_rejects_before_any_change(busy, case, change, parameter, values) -> None:
    before = state_of(busy)

    with pytest.raises(ValueError, match=what_is_wrong(parameter, values=values)):
        busy.cache.admit(**admit_args(change))

    assert_unchanged(busy, before)
    # "new" was not opened: the contract's queries reject it as unknown.
    with pytest.raises(ValueError):
        busy.cache.block_table("new")
    if case != "open request id":
        busy.cache.admit(**admit_args({}))  # and can still be admitted


@pytest.mark.contract
@pytest.mark.rejection
@pytest.mark.parametrize("case", list(BAD_ADMITS))
def test_admit_rejects_malformed_input_before_any_change(busy, case):
    admit_rejects_before_any_change(busy, case, *BAD_ADMITS[case])


@pytest.mark.extension
@pytest.mark.parametrize("case", list(ADMITS_OF_ANOTHER_KIND))
def test_admit_rejects_arguments_of_another_kind_before_any_change(busy, case):
    admit_rejects_before_any_change(busy, case, *ADMITS_OF_ANOTHER_KIND[case])


@pytest.mark.extension
@pytest.mark.parametrize("case", list(BAD_ADMITS) + list(ADMITS_OF_ANOTHER_KIND))
def test_admit_message_uses_the_parameter_identifier(busy, case):
    change, parameter, _ = {**BAD_ADMITS, **ADMITS_OF_ANOTHER_KIND}[case]
    with pytest.raises(ValueError, match=parameter):
        busy.cache.admit(**admit_args(change))


@pytest.mark.contract
@pytest.mark.rejection
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
        lambda cache: cache.model_inputs(["a", "zzz"]),  # an unknown id on the second row
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
        "model inputs of an unknown second id",
    ],
)
def test_other_calls_reject_unknown_ids_and_out_of_range_values(busy, call):
    before = state_of(busy)

    with pytest.raises(ValueError):
        call(busy.cache)

    assert_unchanged(busy, before)


@pytest.mark.contract
def test_model_inputs_of_no_request_is_empty_or_rejected(busy):
    """The README leaves `model_inputs([])` open: `(None, None, None)` or a ValueError."""
    before = state_of(busy)
    try:
        result = busy.cache.model_inputs([])
    except ValueError:
        pass
    else:
        assert tuple(result) == (None, None, None), "no rows: (None, None, None) or ValueError"
    assert_unchanged(busy, before)


# ---- the last malformed inputs at the public doors (issue 36) -----------------------------


@pytest.mark.extension
@pytest.mark.parametrize(
    ("arguments", "name"),
    [((["m"], "c"), "model_id"), (("m", {"c": 1}), "cache_id")],
    ids=["list model id", "dict cache id"],
)
def test_namespace_refuses_an_id_that_is_not_a_str(arguments, name):
    """Unhashable or not digestible: refused when made, not at the first lookup."""
    with pytest.raises(ValueError, match=name):
        pkv.PagedNamespace(*arguments)


@pytest.mark.extension
def test_admit_refuses_tokens_on_meta_before_any_change(busy):
    tokens = torch.tensor([[1, 2, 3, 4, 5]], dtype=torch.long, device="meta")
    before = state_of(busy)

    with pytest.raises(ValueError, match="token_ids"):
        busy.cache.admit(**admit_args({"token_ids": tokens}))

    assert_unchanged(busy, before)
    busy.cache.admit(**admit_args({}))  # "new" was not opened


@pytest.mark.extension
def test_fork_of_an_unknown_parent_names_parent_id(busy):
    before = state_of(busy)

    with pytest.raises(ValueError, match="parent_id 'zz'"):
        busy.cache.fork("zz", "q")

    assert_unchanged(busy, before)
    with pytest.raises(ValueError):
        busy.cache.block_table("q")  # the child was not opened
