"""Forms of valid input the other suites do not take: a cache of a single entry."""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import candidate

pc = candidate("PREFIX_CACHE_MODULE")
NS = pc.PrefixCacheNamespace("model-a", "cache-0")

pytestmark = [pytest.mark.contract, pytest.mark.owner("prefix_lru")]


def test_a_one_entry_cache_keeps_only_the_latest_entry(make_past):
    cache = pc.PrefixCache(block_size=2, max_entries=1)
    first, second = (5, 6), (7, 8)

    cache.store(NS, first, make_past(first))
    cache.store(NS, second, make_past(second))

    assert cache.entry_count == 1
    assert cache.lookup_longest(NS, first) is None
    match = cache.lookup_longest(NS, second)
    assert match is not None and match.tokens == second
    for (key, value), (want_key, want_value) in zip(
        match.past_key_values, make_past(second), strict=True
    ):
        assert torch.equal(key, want_key) and torch.equal(value, want_value)
