"""append_kv_cache: the in-place slot write every other path reuses."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from gptlab_testkit import candidate, test_device
from gptlab_testkit.kv_storage import data_pointers

kvc = candidate("KV_CACHE_MODULE")

pytestmark = [pytest.mark.owner("fixed_capacity_storage"), pytest.mark.contract]


def randn(*shape: int, seed: int) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=generator).to(test_device())


def expected_after_write(
    cache: torch.Tensor, new: torch.Tensor, slots: torch.Tensor
) -> torch.Tensor:
    """Loop oracle: cache[b, :, slots[b, t]] = new[b, :, t]."""
    expected = cache.clone()
    for b, row in enumerate(slots.tolist()):
        for t, slot in enumerate(row):
            expected[b, :, slot] = new[b, :, t]
    return expected


def test_append_kv_cache_writes_exactly_the_chosen_slots_of_each_row():
    key_cache, value_cache = randn(2, 3, 6, 4, seed=0), randn(2, 3, 6, 4, seed=1)
    key_new, value_new = randn(2, 3, 2, 4, seed=2), randn(2, 3, 2, 4, seed=3)
    slots = torch.tensor([[4, 1], [0, 5]], device=test_device())
    want_key = expected_after_write(key_cache, key_new, slots)
    want_value = expected_after_write(value_cache, value_new, slots)

    kvc.append_kv_cache(key_cache, value_cache, key_new, value_new, slots)

    assert torch.equal(key_cache, want_key), "keys: wrong slots written or others changed"
    assert torch.equal(value_cache, want_value), "values: wrong slots written or others changed"


def test_append_kv_cache_writes_in_place_without_reallocating():
    key_cache, value_cache = (
        torch.zeros(1, 2, 5, 3, device=test_device()),
        torch.zeros(1, 2, 5, 3, device=test_device()),
    )
    pointers = data_pointers([(key_cache, value_cache)])
    key_view, value_view = key_cache[:, :, 2:3], value_cache[:, :, 2:3]
    key_new, value_new = randn(1, 2, 1, 3, seed=4), randn(1, 2, 1, 3, seed=5)

    kvc.append_kv_cache(
        key_cache, value_cache, key_new, value_new, torch.tensor([[2]], device=test_device())
    )

    assert data_pointers([(key_cache, value_cache)]) == pointers, "cache was reallocated"
    # A view taken before the call sees the write: the caller's tensor was written.
    assert torch.equal(key_view, key_new), "key not written into the caller's tensor"
    assert torch.equal(value_view, value_new), "value not written into the caller's tensor"


@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_append_kv_cache_matches_a_loop_oracle_for_any_distinct_slots(data):
    B = data.draw(st.integers(1, 3), label="B")
    H = data.draw(st.integers(1, 3), label="H")
    S = data.draw(st.integers(1, 7), label="S")
    D = data.draw(st.integers(1, 4), label="D")
    T = data.draw(st.integers(0, S), label="T")
    rows = [data.draw(st.permutations(range(S)), label=f"row {b}")[:T] for b in range(B)]
    slots = torch.tensor(rows, dtype=torch.long, device=test_device()).reshape(B, T)
    seed = data.draw(st.integers(0, 2**16), label="seed")
    key_cache, value_cache = randn(B, H, S, D, seed=seed), randn(B, H, S, D, seed=seed + 1)
    key_new, value_new = randn(B, H, T, D, seed=seed + 2), randn(B, H, T, D, seed=seed + 3)
    want_key = expected_after_write(key_cache, key_new, slots)
    want_value = expected_after_write(value_cache, value_new, slots)

    kvc.append_kv_cache(key_cache, value_cache, key_new, value_new, slots)

    assert torch.equal(key_cache, want_key)
    assert torch.equal(value_cache, want_value)
