"""KVCache append: preallocated storage written at slot = position - start."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from gptlab_testkit import candidate, test_device
from gptlab_testkit.kv_storage import data_pointers

kvc = candidate("KV_CACHE_MODULE")

pytestmark = [pytest.mark.owner("fixed_capacity_storage"), pytest.mark.contract]

LAYERS, B, H, D = 2, 2, 3, 4


def randn(*shape: int, seed: int) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=generator).to(test_device())


def new_kv(tokens: int, seed: int) -> tuple[tuple[torch.Tensor, torch.Tensor], ...]:
    """Random new-token K/V `[B, H, tokens, D]` for every layer."""
    return tuple(
        (randn(B, H, tokens, D, seed=seed + 2 * i), randn(B, H, tokens, D, seed=seed + 2 * i + 1))
        for i in range(LAYERS)
    )


def long(rows: list[list[int]] | list[int]) -> torch.Tensor:
    return torch.tensor(rows, dtype=torch.long, device=test_device())


def make_cache(capacity: int, starts: list[int] | None = None):
    return kvc.KVCache(
        LAYERS,
        B,
        H,
        capacity,
        D,
        device=test_device(),
        start_positions=None if starts is None else long(starts),
    )


def test_new_cache_preallocates_zero_storage_of_full_capacity():
    cache = make_cache(capacity=6, starts=[3, 7])

    assert len(cache.storage) == LAYERS
    for key, value in cache.storage:
        for tensor in (key, value):
            assert tensor.shape == (B, H, 6, D)
            assert tensor.dtype == torch.float32
            assert tensor.device.type == test_device().type
            assert not tensor.any(), "fresh storage must be zeros"
    assert cache.cache_lengths.tolist() == [0, 0]
    assert cache.cache_start_positions.tolist() == [3, 7]
    assert cache.logical_length == 0


def test_batched_append_over_two_calls_lands_at_position_minus_start():
    cache = make_cache(capacity=6, starts=[3, 7])
    first, second = new_kv(2, seed=0), new_kv(1, seed=10)

    cache.append(first, long([[3, 4], [7, 8]]))
    cache.append(second, long([[5], [9]]))

    for (key, value), (k1, v1), (k2, v2) in zip(cache.storage, first, second, strict=True):
        assert torch.equal(key[:, :, :3], torch.cat([k1, k2], dim=2)), "keys in wrong slots"
        assert torch.equal(value[:, :, :3], torch.cat([v1, v2], dim=2)), "values in wrong slots"
        assert not key[:, :, 3:].any() and not value[:, :, 3:].any(), "wrote past the new tokens"


def test_append_grows_lengths_by_new_tokens_and_keeps_starts():
    cache = make_cache(capacity=6, starts=[3, 7])

    cache.append(new_kv(2, seed=0), long([[3, 4], [7, 8]]))
    assert cache.cache_lengths.tolist() == [2, 2]
    cache.append(new_kv(1, seed=10), long([[5], [9]]))

    assert cache.cache_lengths.tolist() == [3, 3]
    assert cache.cache_start_positions.tolist() == [3, 7]
    assert cache.logical_length == 3


def test_storage_objects_and_pointers_are_stable_for_the_cache_life():
    cache = make_cache(capacity=6, starts=[1, 2])
    tensors = [tensor for pair in cache.storage for tensor in pair]
    pointers = data_pointers(cache.storage)

    def assert_stable(after: str) -> None:
        now = [tensor for pair in cache.storage for tensor in pair]
        assert all(a is b for a, b in zip(now, tensors, strict=True)), f"storage rebound {after}"
        assert data_pointers(cache.storage) == pointers, f"storage reallocated {after}"

    cache.append(new_kv(2, seed=0), long([[1, 2], [2, 3]]))
    assert_stable("by append")
    cache.model_inputs()
    cache.snapshot()
    assert_stable("by model_inputs/snapshot")
    cache.load(new_kv(3, seed=20), long([1, 3]), long([0, 5]))
    assert_stable("by load")
    cache.append(new_kv(1, seed=30), long([[1], [8]]))
    assert_stable("by append after load")
    cache.reset(long([4, 4]))
    assert_stable("by reset")
    cache.append(new_kv(3, seed=40), long([[4, 5, 6], [4, 5, 6]]))
    assert_stable("by append after reset")


@settings(max_examples=20, deadline=None)
@given(
    chunks=st.lists(st.integers(1, 3), min_size=1, max_size=4),
    starts=st.lists(st.integers(0, 5), min_size=B, max_size=B),
)
def test_appending_any_chunk_split_stores_the_whole_sequence(chunks, starts):
    total = sum(chunks)
    cache = make_cache(capacity=total + 1, starts=starts)
    whole = new_kv(total, seed=sum(starts) + 100 * len(chunks))

    done = 0
    for size in chunks:
        positions = long([[s + done + t for t in range(size)] for s in starts])
        cache.append(
            tuple((k[:, :, done : done + size], v[:, :, done : done + size]) for k, v in whole),
            positions,
        )
        done += size

    assert cache.cache_lengths.tolist() == [total] * B
    assert cache.logical_length == total
    for (key, value), (want_key, want_value) in zip(cache.storage, whole, strict=True):
        assert torch.equal(key[:, :, :total], want_key)
        assert torch.equal(value[:, :, :total], want_value)
