"""Rejected input: a clear ValueError before the first write, the cache exactly as it was.

The contract lists no kv_cache errors, so these are this project's behaviour
(extension marks). Every case that breaks only the *last* layer also proves the
checks run before any layer is written.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

from gptlab_testkit import candidate, test_device
from gptlab_testkit.kv_storage import data_pointers

kvc = candidate("KV_CACHE_MODULE")

pytestmark = [pytest.mark.owner("kv_cache_validation"), pytest.mark.extension]

LAYERS, B, H, CAPACITY, D = 2, 2, 2, 6, 3
META = torch.device("meta")  # a device no cache lives on, present on every machine


def randn(*shape: int, seed: int = 0) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=generator).to(test_device())


def long(rows: list[list[int]] | list[int]) -> torch.Tensor:
    return torch.tensor(rows, dtype=torch.long, device=test_device())


def kv(tokens: int, *, layers: int = LAYERS, seed: int = 0, **last_layer: torch.Tensor):
    """Valid new K/V `[B, H, tokens, D]`; `key=`/`value=` replace the last layer's tensor."""
    past = [
        (randn(B, H, tokens, D, seed=seed + 2 * i), randn(B, H, tokens, D, seed=seed + 2 * i + 1))
        for i in range(layers)
    ]
    key, value = past[-1]
    past[-1] = (last_layer.get("key", key), last_layer.get("value", value))
    return tuple(past)


@pytest.fixture
def cache():
    """Rows of lengths 2 and 3 with starts 1 and 4: next positions 3 and 7."""
    cache = kvc.KVCache(LAYERS, B, H, CAPACITY, D, device=test_device())
    cache.load(kv(3, seed=50), long([2, 3]), long([1, 4]))
    return cache


def state_of(cache) -> tuple:
    storage = tuple(t.clone() for pair in cache.storage for t in pair)
    return (
        storage,
        data_pointers(cache.storage),
        cache.cache_lengths.tolist(),
        cache.cache_start_positions.tolist(),
        cache.logical_length,
    )


def assert_unchanged(cache, before: tuple) -> None:
    storage, pointers, lengths, starts, logical = state_of(cache)
    assert pointers == before[1], "storage was reallocated"
    for index, (now, was) in enumerate(zip(storage, before[0], strict=True)):
        assert torch.equal(now, was), f"storage tensor {index} was written by a rejected call"
    assert (lengths, starts, logical) == before[2:], "metadata changed by a rejected call"


NEXT = [[3], [7]]
BAD_APPENDS: dict[str, tuple[Callable[[], tuple], Callable[[], torch.Tensor], str]] = {
    "past capacity": (lambda: kv(4), lambda: long([[3, 4, 5, 6], [7, 8, 9, 10]]), "capacity"),
    "before the start": (lambda: kv(1), lambda: long([[0], [7]]), "start"),
    "gap": (lambda: kv(1), lambda: long([[3], [8]]), "position"),
    "rewrite of a valid slot": (lambda: kv(1), lambda: long([[2], [7]]), "position"),
    "not contiguous": (lambda: kv(2), lambda: long([[3, 5], [7, 8]]), "position"),
    "too few layers": (lambda: kv(1, layers=1), lambda: long(NEXT), "layer"),
    "too many layers": (lambda: kv(1, layers=3), lambda: long(NEXT), "layer"),
    "wrong head count": (lambda: kv(1, key=randn(B, H + 1, 1, D)), lambda: long(NEXT), "shape"),
    "wrong head dim": (lambda: kv(1, value=randn(B, H, 1, D + 1)), lambda: long(NEXT), "shape"),
    "wrong batch": (lambda: kv(1, key=randn(B + 1, H, 1, D)), lambda: long(NEXT), "shape"),
    "K/V tokens differ from positions": (lambda: kv(2), lambda: long(NEXT), "shape"),
    "wrong dtype": (lambda: kv(1, key=randn(B, H, 1, D).double()), lambda: long(NEXT), "dtype"),
    "K/V on another device": (
        lambda: kv(1, value=torch.empty(B, H, 1, D, device=META)),
        lambda: long(NEXT),
        "meta",
    ),
    "positions not long": (lambda: kv(1), lambda: long(NEXT).int(), "int"),
    "positions on another device": (
        lambda: kv(1),
        lambda: torch.empty(B, 1, dtype=torch.long, device=META),
        "meta",
    ),
    "positions of wrong rank": (lambda: kv(1), lambda: long([3, 7]), "shape"),
    "a layer that is not a pair": (
        lambda: (*kv(1)[:-1], (randn(B, H, 1, D),)),
        lambda: long(NEXT),
        "pair",
    ),
}


@pytest.mark.parametrize("case", list(BAD_APPENDS))
def test_rejected_append_raises_and_leaves_the_cache_unchanged(cache, case):
    make_kv, make_positions, words = BAD_APPENDS[case]
    past, positions = make_kv(), make_positions()
    before = state_of(cache)

    with pytest.raises(ValueError, match=f"(?i){words}"):
        cache.append(past, positions)

    assert_unchanged(cache, before)


def test_append_after_a_rejected_call_still_continues_at_the_next_position(cache):
    with pytest.raises(ValueError):
        cache.append(kv(1), long([[4], [8]]))

    cache.append(kv(1, seed=7), long(NEXT))

    assert cache.cache_lengths.tolist() == [3, 4]


BAD_LOADS: dict[str, tuple[Callable[[], tuple], list[int], list[int], str]] = {
    "longer than capacity": (lambda: kv(CAPACITY + 1), [1, 1], [0, 0], "capacity"),
    "length beyond the given cache": (lambda: kv(3), [2, 4], [0, 0], "cache_lengths"),
    "negative length": (lambda: kv(3), [-1, 2], [0, 0], "cache_lengths"),
    "negative start": (lambda: kv(3), [1, 2], [0, -2], "start"),
    "too few layers": (lambda: kv(3, layers=1), [1, 2], [0, 0], "layer"),
    "last layer of another dtype": (
        lambda: kv(3, key=randn(B, H, 3, D).double()),
        [1, 2],
        [0, 0],
        "dtype",
    ),
    "last layer of another length": (
        lambda: kv(3, value=randn(B, H, 2, D)),
        [1, 2],
        [0, 0],
        "shape",
    ),
    "last layer on another device": (
        lambda: kv(3, key=torch.empty(B, H, 3, D, device=META)),
        [1, 2],
        [0, 0],
        "meta",
    ),
}


@pytest.mark.parametrize("case", list(BAD_LOADS))
def test_rejected_load_raises_and_leaves_the_cache_unchanged(cache, case):
    make_kv, lengths, starts, words = BAD_LOADS[case]
    past = make_kv()
    before = state_of(cache)

    with pytest.raises(ValueError, match=f"(?i){words}"):
        cache.load(past, long(lengths), long(starts))

    assert_unchanged(cache, before)


@pytest.mark.parametrize(
    ("lengths", "starts", "words"),
    [
        (lambda: long([[1, 2]]), lambda: long([0, 0]), "cache_lengths"),
        (lambda: long([1, 2]).int(), lambda: long([0, 0]), "cache_lengths"),
        (lambda: long([1, 2]), lambda: long([0, 0, 0]), "cache_start_positions"),
        (lambda: long([1, 2]), lambda: torch.zeros(B, dtype=torch.long, device=META), "meta"),
    ],
    ids=["lengths of wrong shape", "lengths not long", "starts of wrong shape", "starts on meta"],
)
def test_rejected_load_metadata_leaves_the_cache_unchanged(cache, lengths, starts, words):
    before = state_of(cache)

    with pytest.raises(ValueError, match=f"(?i){words}"):
        cache.load(kv(3), lengths(), starts())

    assert_unchanged(cache, before)


@pytest.mark.parametrize(
    ("starts", "words"),
    [(lambda: long([1, 2, 3]), "start_positions"), (lambda: long([0, -1]), "non-negative")],
    ids=["wrong length", "negative"],
)
def test_rejected_reset_leaves_the_cache_unchanged(cache, starts, words):
    before = state_of(cache)

    with pytest.raises(ValueError, match=f"(?i){words}"):
        cache.reset(starts())

    assert_unchanged(cache, before)


BAD_SLOT_WRITES = {
    "slot at capacity": (lambda: long([[0], [4]]), 1, "slots"),
    "negative slot": (lambda: long([[-1], [0]]), 1, "slots"),
    "repeated slot in a row": (lambda: long([[1, 1], [0, 2]]), 2, "distinct"),
    "slots not long": (lambda: long([[0], [1]]).int(), 1, "slots"),
    "slots on another device": (
        lambda: torch.zeros(B, 1, dtype=torch.long, device=META),
        1,
        "meta",
    ),
    "new tokens differ from slots": (lambda: long([[0], [1]]), 3, "shape"),
}


@pytest.mark.parametrize("case", list(BAD_SLOT_WRITES))
def test_rejected_append_kv_cache_leaves_both_caches_unchanged(case):
    make_slots, tokens, words = BAD_SLOT_WRITES[case]
    key_cache, value_cache = randn(B, H, 4, D, seed=1), randn(B, H, 4, D, seed=2)
    key_before, value_before = key_cache.clone(), value_cache.clone()

    with pytest.raises(ValueError, match=f"(?i){words}"):
        kvc.append_kv_cache(
            key_cache,
            value_cache,
            randn(B, H, tokens, D, seed=3),
            randn(B, H, tokens, D, seed=4),
            make_slots(),
        )

    assert torch.equal(key_cache, key_before) and torch.equal(value_cache, value_before)


def test_append_kv_cache_on_meta_tensors_names_the_cache_and_the_device():
    """All five on meta (consistent in every other respect): the cache holds no data."""
    caches = (torch.zeros(B, H, 4, D, device=META), torch.zeros(B, H, 4, D, device=META))
    new = (torch.zeros(B, H, 1, D, device=META), torch.zeros(B, H, 1, D, device=META))
    slots = torch.tensor([[0], [1]], dtype=torch.long, device=META)

    with pytest.raises(ValueError, match="key_cache.*meta"):
        kvc.append_kv_cache(*caches, *new, slots)


def test_append_kv_cache_rejects_new_values_of_another_dtype():
    key_cache, value_cache = randn(B, H, 4, D, seed=1), randn(B, H, 4, D, seed=2)
    key_before, value_before = key_cache.clone(), value_cache.clone()

    with pytest.raises(ValueError, match="(?i)dtype"):
        kvc.append_kv_cache(
            key_cache, value_cache, randn(B, H, 1, D), randn(B, H, 1, D).double(), long([[0], [1]])
        )

    assert torch.equal(key_cache, key_before) and torch.equal(value_cache, value_before)


@pytest.mark.parametrize(
    ("arguments", "error"),
    [
        ({"layer_count": 0}, ValueError),
        ({"batch_size": -1}, ValueError),
        ({"head_count": True}, TypeError),
        ({"capacity": 2.0}, TypeError),
        ({"head_dim": 0}, ValueError),
        ({"dtype": torch.long}, ValueError),
        ({"start_positions": [0, 0, 0]}, ValueError),
        ({"start_positions": [0, -1]}, ValueError),
    ],
    ids=lambda case: (
        next(iter(case)) + "=" + repr(next(iter(case.values())))
        if isinstance(case, dict)
        else case.__name__
    ),
)
def test_construction_rejects_bad_sizes_dtype_and_starts(arguments, error):
    sizes = {"layer_count": LAYERS, "batch_size": B, "head_count": H, "capacity": 4, "head_dim": D}
    keywords = {"device": test_device()}
    for name, value in arguments.items():
        (sizes if name in sizes else keywords)[name] = value
    if isinstance(keywords.get("start_positions"), list):
        keywords["start_positions"] = long(keywords["start_positions"])

    with pytest.raises(error, match=f"(?i){next(iter(arguments))}"):
        kvc.KVCache(*sizes.values(), **keywords)


def test_from_past_key_values_rejects_a_capacity_below_the_given_length():
    with pytest.raises(ValueError, match="(?i)capacity"):
        kvc.KVCache.from_past_key_values(kv(4), long([4, 4]), long([0, 0]), capacity=3)


def test_from_past_key_values_rejects_an_empty_cache():
    with pytest.raises(ValueError, match="(?i)past_key_values"):
        kvc.KVCache.from_past_key_values((), long([0, 0]), long([0, 0]))
