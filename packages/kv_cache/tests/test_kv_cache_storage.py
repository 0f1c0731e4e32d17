"""KVCache append: preallocated storage written at slot = position - start."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from gptlab_testkit import candidate, test_device
from gptlab_testkit.kv_storage import data_pointers
from gptlab_testkit.objects import assert_same_objects, reported

pytestmark = [pytest.mark.owner("fixed_capacity_storage"), pytest.mark.contract]


def test_new_cache_preallocates_zero_storage_of_full_capacity(kv):
    cache = kv.cache(capacity=6, starts=[3, 7])

    assert len(cache.storage) == kv.layers
    for key, value in cache.storage:
        for tensor in (key, value):
            assert tensor.shape == kv.shape(6)
            assert tensor.dtype == torch.float32
            assert tensor.device.type == test_device().type
            assert not tensor.any(), "fresh storage must be zeros"
    assert cache.cache_lengths.tolist() == [0, 0]
    assert cache.cache_start_positions.tolist() == [3, 7]
    assert cache.logical_length == 0


def test_batched_append_over_two_calls_lands_at_position_minus_start(kv):
    cache = kv.cache(capacity=6, starts=[3, 7])
    first, second = kv.random(2, seed=0), kv.random(1, seed=10)

    cache.append(first, kv.long([[3, 4], [7, 8]]))
    cache.append(second, kv.long([[5], [9]]))

    for (key, value), (k1, v1), (k2, v2) in zip(cache.storage, first, second, strict=True):
        assert torch.equal(key[:, :, :3], torch.cat([k1, k2], dim=2)), "keys in wrong slots"
        assert torch.equal(value[:, :, :3], torch.cat([v1, v2], dim=2)), "values in wrong slots"
        assert not key[:, :, 3:].any() and not value[:, :, 3:].any(), "wrote past the new tokens"


def test_append_grows_lengths_by_new_tokens_and_keeps_starts(kv):
    cache = kv.cache(capacity=6, starts=[3, 7])

    cache.append(kv.random(2, seed=0), kv.long([[3, 4], [7, 8]]))
    assert cache.cache_lengths.tolist() == [2, 2]
    cache.append(kv.random(1, seed=10), kv.long([[5], [9]]))

    assert cache.cache_lengths.tolist() == [3, 3]
    assert cache.cache_start_positions.tolist() == [3, 7]
    assert cache.logical_length == 3


def test_storage_objects_and_pointers_are_stable_for_the_cache_life(kv):
    cache = kv.cache(capacity=6, starts=[1, 2])
    tensors = cache.storage
    pointers = data_pointers(tensors)

    def assert_stable(after: str) -> None:
        now = cache.storage
        assert_same_objects(now, tensors, f"storage rebound {after}")
        assert data_pointers(now) == pointers, f"storage reallocated {after}{reported(now)}"

    cache.append(kv.random(2, seed=0), kv.long([[1, 2], [2, 3]]))
    assert_stable("by append")
    cache.model_inputs()
    cache.snapshot()
    assert_stable("by model_inputs/snapshot")
    cache.load(kv.random(3, seed=20), kv.long([1, 3]), kv.long([0, 5]))
    assert_stable("by load")
    cache.append(kv.random(1, seed=30), kv.long([[1], [8]]))
    assert_stable("by append after load")
    cache.reset(kv.long([4, 4]))
    assert_stable("by reset")
    cache.append(kv.random(3, seed=40), kv.long([[4, 5, 6], [4, 5, 6]]))
    assert_stable("by append after reset")


@settings(max_examples=20, deadline=None)
@given(chunks=st.lists(st.integers(1, 3), min_size=1, max_size=4), data=st.data())
def test_appending_any_chunk_split_stores_the_whole_sequence(kv, chunks, data):
    row_starts = st.lists(st.integers(0, 5), min_size=kv.batch, max_size=kv.batch)
    starts = data.draw(row_starts, label="starts")
    total = sum(chunks)
    cache = kv.cache(capacity=total + 1, starts=starts)
    whole = kv.random(total, seed=sum(starts) + 100 * len(chunks))

    done = 0
    for size in chunks:
        positions = kv.long([[s + done + t for t in range(size)] for s in starts])
        cache.append(
            tuple((k[:, :, done : done + size], v[:, :, done : done + size]) for k, v in whole),
            positions,
        )
        done += size

    assert cache.cache_lengths.tolist() == [total] * kv.batch
    assert cache.logical_length == total
    for (key, value), (want_key, want_value) in zip(cache.storage, whole, strict=True):
        assert torch.equal(key[:, :, :total], want_key)
        assert torch.equal(value[:, :, :total], want_value)


def test_dtype_and_device_default_to_float32_on_the_cpu():
    """The signature's defaults: `dtype=torch.float32, device="cpu"`, starts at zero."""
    cache = candidate("KV_CACHE_MODULE").KVCache(2, 2, 3, 5, 4)

    for key, value in cache.storage:
        for tensor in (key, value):
            assert tensor.dtype == torch.float32 and tensor.device.type == "cpu"
            assert tensor.shape == (2, 3, 5, 4)
    assert cache.cache_start_positions.tolist() == [0, 0]
    assert cache.cache_lengths.tolist() == [0, 0]
