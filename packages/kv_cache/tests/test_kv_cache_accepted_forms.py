"""Every form of valid input the contract names is accepted and behaves as promised.

The other suites use one geometry (two layers, float32, tensor starts, a source
longer than one slot); these cases take the other forms the contract allows: its
defaults, another float dtype, one layer, a source of zero or one slot, two caches
cut from one allocation, a batch-one cache whose batch stride is 0, inference tensors.
Start positions as a list of ints are this project's extension
(`test_kv_cache_extension_forms.py`): the contract's starts are a `[B]` long tensor.
"""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import candidate, test_device
from gptlab_testkit.oracles import seeded
from gptlab_testkit.slot_writes import loop_slot_write

kvc = candidate("KV_CACHE_MODULE")

pytestmark = [pytest.mark.contract]

B, H, D = 2, 3, 4


def one_layer(tokens: int, seed: int, dtype: torch.dtype = torch.float32):
    """One layer of seeded K/V `[B, H, tokens, D]`."""
    key = seeded(B, H, tokens, D, seed=seed, dtype=dtype)
    return ((key, seeded(B, H, tokens, D, seed=seed + 1, dtype=dtype)),)


def long(rows) -> torch.Tensor:
    return torch.tensor(rows, dtype=torch.long, device=test_device())


@pytest.mark.owner("fixed_capacity_storage")
def test_constructor_defaults_are_float32_on_the_cpu_with_zero_starts():
    cache = kvc.KVCache(1, B, H, 5, D)

    assert len(cache.storage) == 1
    for tensor in cache.storage[0]:
        assert tensor.shape == (B, H, 5, D)
        assert tensor.dtype == torch.float32, "dtype defaults to torch.float32"
        assert tensor.device.type == "cpu", "device defaults to the cpu"
        assert not tensor.any()
    assert cache.cache_start_positions.tolist() == [0, 0]


@pytest.mark.owner("fixed_capacity_storage")
def test_constructor_dtype_sets_every_storage_tensor():
    cache = kvc.KVCache(2, B, H, 5, D, dtype=torch.float64, device=test_device())

    for key, value in cache.storage:
        assert key.dtype == torch.float64 and value.dtype == torch.float64


@pytest.mark.owner("fixed_capacity_storage")
def test_a_one_layer_cache_appends_and_loads():
    cache = kvc.KVCache(1, B, H, 4, D, device=test_device())
    new, source = one_layer(2, seed=5), one_layer(3, seed=7)

    cache.append(new, long([[0, 1], [0, 1]]))
    assert torch.equal(cache.storage[0][0][:, :, :2], new[0][0])
    cache.load(source, long([3, 1]), long([0, 4]))

    key = cache.storage[0][0]
    assert torch.equal(key[0, :, :3], source[0][0][0, :, :3])
    assert torch.equal(key[1, :, :1], source[0][0][1, :, :1])
    assert cache.cache_lengths.tolist() == [3, 1]


@pytest.mark.owner("storage_lifecycle")
def test_from_past_key_values_of_one_layer():
    source = one_layer(3, seed=9)

    cache = kvc.KVCache.from_past_key_values(source, long([3, 2]), long([0, 1]))

    assert len(cache.storage) == 1 and cache.storage[0][0].shape == (B, H, 3, D)
    assert torch.equal(cache.snapshot()[0][0][0], source[0][0][0])


@pytest.mark.owner("storage_lifecycle")
def test_from_past_key_values_keeps_the_sources_dtype_bit_for_bit():
    source = one_layer(3, seed=11, dtype=torch.float64)

    cache = kvc.KVCache.from_past_key_values(source, long([3, 3]), long([0, 0]))

    key, value = cache.storage[0]
    assert key.dtype == torch.float64 and value.dtype == torch.float64
    assert torch.equal(key, source[0][0]) and torch.equal(value, source[0][1])


@pytest.mark.owner("storage_lifecycle")
def test_from_past_key_values_of_a_single_slot_with_and_without_a_capacity():
    source = one_layer(1, seed=13)

    for capacity in (None, 1):
        cache = kvc.KVCache.from_past_key_values(
            source, long([1, 1]), long([4, 0]), capacity=capacity
        )
        assert cache.storage[0][0].shape == (B, H, 1, D), f"capacity={capacity}"
        assert torch.equal(cache.storage[0][0], source[0][0]), f"capacity={capacity}"


@pytest.mark.owner("storage_lifecycle")
def test_from_past_key_values_of_no_slots_with_a_capacity_is_empty():
    source = one_layer(0, seed=15)

    cache = kvc.KVCache.from_past_key_values(source, long([0, 0]), long([2, 5]), capacity=3)

    assert cache.storage[0][0].shape == (B, H, 3, D)
    assert cache.cache_lengths.tolist() == [0, 0]
    assert cache.cache_start_positions.tolist() == [2, 5]
    assert cache.model_inputs() == (None, None, None)


@pytest.mark.owner("fixed_capacity_storage")
@pytest.mark.parametrize("key_half", [0, 1], ids=["key-first", "value-first"])
def test_append_kv_cache_into_two_halves_of_one_allocation(key_half):
    """vLLM-style `[2, B, H, S, D]` storage: the halves touch but never overlap."""
    both = seeded(2, B, H, 5, D, seed=17)
    key_cache, value_cache = both[key_half], both[1 - key_half]
    key_new, value_new = seeded(B, H, 2, D, seed=18), seeded(B, H, 2, D, seed=19)
    slots = long([[4, 0], [1, 3]])
    want_key = loop_slot_write(key_cache, key_new, slots)
    want_value = loop_slot_write(value_cache, value_new, slots)

    kvc.append_kv_cache(key_cache, value_cache, key_new, value_new, slots)

    assert torch.equal(key_cache, want_key) and torch.equal(value_cache, want_value)


@pytest.mark.owner("fixed_capacity_storage")
def test_append_kv_cache_writes_inference_tensors_inside_inference_mode():
    """A server allocates and writes its caches under torch.inference_mode()."""
    key_new, value_new = seeded(B, H, 1, D, seed=21), seeded(B, H, 1, D, seed=22)
    slots = long([[2], [0]])
    with torch.inference_mode():
        key_cache = torch.zeros(B, H, 3, D, device=test_device())
        value_cache = torch.zeros(B, H, 3, D, device=test_device())
        want_key = loop_slot_write(key_cache, key_new, slots)
        want_value = loop_slot_write(value_cache, value_new, slots)

        kvc.append_kv_cache(key_cache, value_cache, key_new, value_new, slots)

    assert torch.equal(key_cache, want_key) and torch.equal(value_cache, want_value)


@pytest.mark.owner("fixed_capacity_storage")
def test_append_kv_cache_reads_broadcast_new_kv():
    """New K/V may be expanded views (one head's values for every head): only read."""
    key_cache, value_cache = seeded(B, H, 4, D, seed=23), seeded(B, H, 4, D, seed=24)
    key_new = seeded(B, 1, 2, D, seed=25).expand(B, H, 2, D)
    value_new = seeded(B, 1, 2, D, seed=26).expand(B, H, 2, D)
    slots = long([[1, 3], [2, 0]])
    want_key = loop_slot_write(key_cache, key_new, slots)
    want_value = loop_slot_write(value_cache, value_new, slots)

    kvc.append_kv_cache(key_cache, value_cache, key_new, value_new, slots)

    assert torch.equal(key_cache, want_key) and torch.equal(value_cache, want_value)


@pytest.mark.owner("fixed_capacity_storage")
def test_append_kv_cache_writes_a_batch_one_cache_whose_batch_stride_is_zero():
    """A size-1 dimension may have any stride (0 here): it still holds one element per slot."""
    key_cache = torch.zeros(H, 4, D, device=test_device()).as_strided(
        (1, H, 4, D), (0, 4 * D, D, 1)
    )
    value_cache = torch.zeros(H, 4, D, device=test_device()).as_strided(
        (1, H, 4, D), (0, 4 * D, D, 1)
    )
    key_new, value_new = seeded(1, H, 2, D, seed=27), seeded(1, H, 2, D, seed=28)
    slots = long([[3, 1]])
    want_key = loop_slot_write(key_cache, key_new, slots)
    want_value = loop_slot_write(value_cache, value_new, slots)

    kvc.append_kv_cache(key_cache, value_cache, key_new, value_new, slots)

    assert torch.equal(key_cache, want_key) and torch.equal(value_cache, want_value)
