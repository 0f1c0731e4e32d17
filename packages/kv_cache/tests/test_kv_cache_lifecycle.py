"""KVCache load, from_past_key_values, model_inputs, snapshot and reset."""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import assert_no_shared_storage, candidate, shares_storage
from gptlab_testkit.kv_storage import data_pointers
from gptlab_testkit.objects import assert_same_objects, assert_values_now, reported

kvc = candidate("KV_CACHE_MODULE")

pytestmark = [pytest.mark.owner("storage_lifecycle"), pytest.mark.contract]


def poisoned_past(kv, lengths: list[int], tokens: int, seed: int):
    """Random K/V `[B, H, tokens, D]` whose slots past each row's length hold NaN."""
    past = kv.random(tokens, seed)
    for key, value in past:
        for b, length in enumerate(lengths):
            key[b, :, length:] = float("nan")
            value[b, :, length:] = float("nan")
    return past


def filled_cache(kv, capacity: int = 7):
    """A cache whose every slot holds (stale) data."""
    cache = kv.cache(capacity, starts=[0, 0])
    cache.append(kv.random(capacity, seed=99), kv.long([list(range(capacity))] * kv.batch))
    return cache


def test_load_keeps_each_rows_valid_prefix_and_zeroes_every_other_slot(kv):
    cache = filled_cache(kv, capacity=7)
    lengths = [2, 4]
    source = poisoned_past(kv, lengths, tokens=5, seed=1)

    cache.load(source, kv.long(lengths), kv.long([3, 0]))

    for (key, value), (src_key, src_value) in zip(cache.storage, source, strict=True):
        for stored, given in ((key, src_key), (value, src_value)):
            for b, length in enumerate(lengths):
                assert torch.equal(stored[b, :, :length], given[b, :, :length]), (
                    f"row {b}: valid prefix not copied"
                )
                assert torch.equal(
                    stored[b, :, length:], torch.zeros_like(stored[b, :, length:])
                ), f"row {b}: slots from {length} on are not zero (stale or padding data)"


def test_load_sets_lengths_starts_and_logical_length(kv):
    cache = filled_cache(kv, capacity=7)

    cache.load(kv.random(5, seed=1), kv.long([2, 4]), kv.long([3, 0]))

    assert cache.cache_lengths.tolist() == [2, 4]
    assert cache.cache_start_positions.tolist() == [3, 0]
    assert cache.logical_length == 4


def test_load_copies_so_the_source_is_neither_aliased_nor_written(kv):
    source = kv.random(3, seed=1)
    before = tuple((k.clone(), v.clone()) for k, v in source)
    cache = kv.cache(capacity=5)

    cache.load(source, kv.long([3, 3]), kv.long([0, 0]))
    cache.append(kv.random(2, seed=7), kv.long([[3, 4], [3, 4]]))

    assert_no_shared_storage(cache.storage, source, "storage after load")
    for (key, value), (key0, value0) in zip(source, before, strict=True):
        assert torch.equal(key, key0) and torch.equal(value, value0), "load source was written"


def test_from_past_key_values_sizes_from_the_first_key_and_loads(kv):
    source = kv.random(4, seed=2)

    cache = kvc.KVCache.from_past_key_values(source, kv.long([4, 2]), kv.long([1, 6]))

    assert len(cache.storage) == kv.layers
    assert cache.storage[0][0].shape == kv.shape(4), "capacity must default to the key's S"
    assert cache.cache_lengths.tolist() == [4, 2]
    assert cache.cache_start_positions.tolist() == [1, 6]
    assert torch.equal(cache.storage[1][1][0], source[1][1][0])


def test_from_past_key_values_with_a_larger_capacity_zero_fills_the_rest(kv):
    source = kv.random(4, seed=2)

    cache = kvc.KVCache.from_past_key_values(source, kv.long([4, 4]), kv.long([0, 0]), capacity=9)

    for (key, value), (src_key, src_value) in zip(cache.storage, source, strict=True):
        assert key.shape == value.shape == kv.shape(9)
        assert torch.equal(key[:, :, :4], src_key) and torch.equal(value[:, :, :4], src_value)
        assert not key[:, :, 4:].any() and not value[:, :, 4:].any()


def test_model_inputs_of_an_empty_cache_are_none(kv):
    assert kv.cache(capacity=4).model_inputs() == (None, None, None)


def test_model_inputs_are_storage_views_sliced_to_the_logical_length(kv):
    cache = kv.cache(capacity=7)
    cache.load(kv.random(5, seed=3), kv.long([2, 4]), kv.long([3, 0]))

    past, lengths, starts = cache.model_inputs()

    assert len(past) == kv.layers
    for (key, value), (stored_key, stored_value) in zip(past, cache.storage, strict=True):
        assert key.shape == value.shape == kv.shape(4), "K/V must be sliced to logical_length"
        assert torch.equal(key, stored_key[:, :, :4]) and torch.equal(value, stored_value[:, :, :4])
        assert shares_storage(key, stored_key) and shares_storage(value, stored_value), (
            "model_inputs must be views of the storage, not copies" + reported(key)
        )
    assert lengths.tolist() == [2, 4] and starts.tolist() == [3, 0]


def test_metadata_properties_are_copies(kv):
    cache = kv.cache(capacity=4, starts=[1, 2])
    cache.append(kv.random(1, seed=4), kv.long([[1], [2]]))

    with torch.inference_mode():  # the copies may be inference tensors
        cache.cache_lengths.fill_(3)
        cache.cache_start_positions.fill_(9)

    assert cache.cache_lengths.tolist() == [1, 1]
    assert cache.cache_start_positions.tolist() == [1, 2]
    # Two reads are two copies (in judge mode the copies above are the judge's own).
    for name in ("cache_lengths", "cache_start_positions"):
        first, second = getattr(cache, name), getattr(cache, name)
        assert not shares_storage(first, second), (
            f"{name} returns the cache's own tensor" + reported(first)
        )


def test_snapshot_is_a_clone_sliced_to_the_logical_length(kv):
    cache = kv.cache(capacity=6)
    written = kv.random(3, seed=5)
    cache.append(written, kv.long([[0, 1, 2], [0, 1, 2]]))

    snapshot = cache.snapshot()
    cache.append(kv.random(1, seed=6), kv.long([[3], [3]]))
    cache.load(kv.random(3, seed=7), kv.long([3, 3]), kv.long([0, 0]))

    assert_no_shared_storage(snapshot, cache.storage, "snapshot")
    for (key, value), (want_key, want_value) in zip(snapshot, written, strict=True):
        assert key.shape == value.shape == kv.shape(3), "snapshot must be sliced to logical_length"
        assert torch.equal(key, want_key) and torch.equal(value, want_value), (
            "later writes reached the snapshot"
        )


def test_reset_keeps_storage_and_hides_old_tokens(kv):
    cache = kv.cache(capacity=5)
    cache.append(kv.random(3, seed=8), kv.long([[0, 1, 2], [0, 1, 2]]))
    tensors = cache.storage
    pointers = data_pointers(tensors)

    cache.reset(kv.long([5, 2]))

    now = cache.storage
    assert_same_objects(now, tensors, "reset rebound the storage")
    assert data_pointers(now) == pointers, "reset reallocated the storage" + reported(now)
    assert cache.cache_lengths.tolist() == [0, 0]
    assert cache.cache_start_positions.tolist() == [5, 2]
    assert cache.logical_length == 0
    assert cache.model_inputs() == (None, None, None)
    fresh = kv.random(1, seed=9)
    cache.append(fresh, kv.long([[5], [2]]))
    for (key, value), (want_key, want_value) in zip(cache.snapshot(), fresh, strict=True):
        assert torch.equal(key, want_key) and torch.equal(value, want_value), (
            "old tokens visible after reset"
        )


def test_reset_without_starts_sets_them_to_zero(kv):
    cache = kv.cache(capacity=3, starts=[2, 1])
    cache.append(kv.random(1, seed=10), kv.long([[2], [1]]))

    cache.reset()

    assert cache.cache_start_positions.tolist() == [0, 0]
    assert cache.cache_lengths.tolist() == [0, 0]


def test_load_zeroes_the_second_rows_padding(kv):
    """A per-row rule on a row other than the first: row 1's slots past its length."""
    cache = filled_cache(kv, capacity=7)
    source = poisoned_past(kv, [5, 1], tokens=5, seed=11)

    cache.load(source, kv.long([5, 1]), kv.long([0, 2]))

    for key, value in cache.storage:
        for stored in (key, value):
            assert torch.equal(stored[1, :, 1:], torch.zeros_like(stored[1, :, 1:])), (
                "row 1: source padding or stale slots survived load"
            )


def test_load_of_a_shorter_source_zeroes_what_the_storage_held_past_it(kv):
    cache = filled_cache(kv, capacity=7)

    cache.load(kv.random(2, seed=12), kv.long([2, 2]), kv.long([0, 0]))

    for key, value in cache.storage:
        for stored in (key, value):
            assert torch.equal(stored[:, :, 2:], torch.zeros_like(stored[:, :, 2:])), (
                "slots past the source kept the storage's old data"
            )


@pytest.mark.parametrize("steps", [[1], [1, 2], [3, 1]], ids=["one", "one+two", "three+one"])
def test_model_inputs_follow_the_logical_length_as_tokens_arrive(kv, steps):
    cache = kv.cache(capacity=8)
    length = 0
    for count in steps:
        positions = [list(range(length, length + count))] * kv.batch
        cache.append(kv.random(count, seed=13 + length), kv.long(positions))
        length += count
        past, lengths, _ = cache.model_inputs()
        assert lengths.tolist() == [length] * kv.batch
        for key, value in past:
            assert key.shape == value.shape == kv.shape(length), (
                f"model_inputs of {length} tokens in capacity 8"
            )


def test_a_view_taken_before_reset_sees_the_writes_after_it(kv):
    cache = kv.cache(capacity=4)
    cache.append(kv.random(2, seed=14), kv.long([[0, 1], [0, 1]]))
    views = [tensor[:, :, :1] for pair in cache.storage for tensor in pair]

    cache.reset()
    cache.reset()  # twice: still the same storage
    fresh = kv.random(1, seed=15)
    cache.append(fresh, kv.long([[0], [0]]))

    wanted = [tensor for pair in fresh for tensor in pair]
    for view, want in zip(views, wanted, strict=True):
        assert_values_now(view, want, "reset moved the storage: an earlier view went stale")


def test_load_accepts_an_empty_row_and_zeroes_it(kv):
    """A valid length is 0..S in every row: row 1 empty loads (not rejected), all zeros."""
    cache = filled_cache(kv, capacity=7)

    cache.load(kv.random(3, seed=16), kv.long([3, 0]), kv.long([0, 5]))

    assert cache.cache_lengths.tolist() == [3, 0]
    assert cache.cache_start_positions.tolist() == [0, 5]
    assert cache.logical_length == 3
    for key, value in cache.storage:
        for stored in (key, value):
            assert torch.equal(stored[1], torch.zeros_like(stored[1])), "row 1 is not empty"
