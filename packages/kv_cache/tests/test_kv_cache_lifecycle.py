"""KVCache load, from_past_key_values, model_inputs, snapshot and reset."""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import assert_no_shared_storage, candidate, shares_storage
from gptlab_testkit.kv_storage import data_pointers

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
            "model_inputs must be views of the storage, not copies"
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
    tensors = [tensor for pair in cache.storage for tensor in pair]
    pointers = data_pointers(cache.storage)

    cache.reset(kv.long([5, 2]))

    assert all(a is b for a, b in zip((t for p in cache.storage for t in p), tensors, strict=True))
    assert data_pointers(cache.storage) == pointers, "reset reallocated the storage"
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
