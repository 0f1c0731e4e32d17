"""Start positions as a list of ints: a form this project accepts beyond the contract.

The contract's start positions are a `[B]` long tensor (or none); the reference also takes
a sequence of ints, to the constructor and to `reset`. A candidate that takes only the
tensor is not graded on these.
"""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import candidate, test_device
from gptlab_testkit.oracles import seeded

kvc = candidate("KV_CACHE_MODULE")

pytestmark = [pytest.mark.extension]

B, H, D = 2, 3, 4


def one_layer(tokens: int, seed: int):
    """One layer of seeded K/V `[B, H, tokens, D]`."""
    return ((seeded(B, H, tokens, D, seed=seed), seeded(B, H, tokens, D, seed=seed + 1)),)


def long(rows) -> torch.Tensor:
    return torch.tensor(rows, dtype=torch.long, device=test_device())


@pytest.mark.owner("fixed_capacity_storage")
def test_start_positions_may_be_a_sequence_of_ints():
    cache = kvc.KVCache(1, B, H, 5, D, device=test_device(), start_positions=[3, 7])
    new = one_layer(2, seed=1)

    assert cache.cache_start_positions.tolist() == [3, 7]
    assert cache.cache_start_positions.dtype == torch.long
    cache.append(new, long([[3, 4], [7, 8]]))
    key, value = cache.storage[0]
    assert torch.equal(key[:, :, :2], new[0][0]) and torch.equal(value[:, :, :2], new[0][1])


@pytest.mark.owner("storage_lifecycle")
def test_reset_takes_start_positions_as_a_sequence_of_ints():
    cache = kvc.KVCache(1, B, H, 5, D, device=test_device())

    cache.reset([2, 9])

    assert cache.cache_start_positions.tolist() == [2, 9]
    cache.append(one_layer(1, seed=3), long([[2], [9]]))
    assert cache.cache_lengths.tolist() == [1, 1]
