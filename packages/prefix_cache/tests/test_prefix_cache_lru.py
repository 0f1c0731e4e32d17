"""Entry-level LRU: capacity counts entries; hits and stores refresh recency."""

from __future__ import annotations

import pytest

from gptlab_testkit import candidate

pc = candidate("PREFIX_CACHE_MODULE")
NS = pc.PrefixCacheNamespace("model-a", "cache-0")

pytestmark = [pytest.mark.contract, pytest.mark.owner("prefix_lru")]

# One-block prompts: each store makes exactly one entry.
A, B, C = (1, 1, 1, 1), (2, 2, 2, 2), (3, 3, 3, 3)


def two_entry_cache(make_past):
    cache = pc.PrefixCache(block_size=4, max_entries=2)
    for prompt in (A, B):
        cache.store(NS, prompt, make_past(prompt))
    return cache


def present(cache, *prompts):
    return [cache.lookup_longest(NS, prompt) is not None for prompt in prompts]


def test_capacity_counts_entries(make_past):
    cache = pc.PrefixCache(block_size=2, max_entries=3)
    prompt = (1, 2, 3, 4, 5, 6, 7, 8)
    cache.store(NS, prompt, make_past(prompt))  # four boundaries, three slots
    assert cache.entry_count == 3


def test_capacity_is_shared_across_namespaces(make_past):
    cache = pc.PrefixCache(block_size=4, max_entries=2)
    for model_id in ("m0", "m1", "m2"):
        cache.store(pc.PrefixCacheNamespace(model_id, "c"), A, make_past(A))
    assert cache.entry_count == 2


def test_least_recently_stored_entry_is_evicted(make_past):
    cache = two_entry_cache(make_past)
    cache.store(NS, C, make_past(C))
    assert cache.entry_count == 2
    assert present(cache, A, B, C) == [False, True, True]


def test_lookup_hit_refreshes_recency(make_past):
    cache = two_entry_cache(make_past)
    assert cache.lookup_longest(NS, A) is not None
    cache.store(NS, C, make_past(C))
    assert present(cache, A, B, C) == [True, False, True]


def test_hit_on_a_shorter_prefix_refreshes_that_entry(make_past):
    cache = two_entry_cache(make_past)
    assert cache.lookup_longest(NS, (*A, 9, 9)) is not None  # hits entry A
    cache.store(NS, C, make_past(C))
    assert present(cache, A, B, C) == [True, False, True]


def test_store_refreshes_recency(make_past):
    cache = two_entry_cache(make_past)
    cache.store(NS, A, make_past(A))
    assert cache.entry_count == 2
    cache.store(NS, C, make_past(C))
    assert present(cache, A, B, C) == [True, False, True]


def test_miss_does_not_refresh_anything(make_past):
    cache = two_entry_cache(make_past)
    assert cache.lookup_longest(NS, C) is None
    cache.store(NS, C, make_past(C))
    assert present(cache, A, B, C) == [False, True, True]


def test_clear_drops_every_entry(make_past):
    cache = two_entry_cache(make_past)
    cache.clear()
    assert cache.entry_count == 0
    assert present(cache, A, B) == [False, False]
    cache.store(NS, C, make_past(C))
    assert present(cache, C) == [True]


def test_a_hit_capped_by_max_length_refreshes_the_entry_it_hits(make_past):
    cache = two_entry_cache(make_past)
    assert cache.lookup_longest(NS, (*A, 7, 7, 7, 7), max_length=4) is not None  # entry A
    cache.store(NS, C, make_past(C))
    assert present(cache, A, B, C) == [True, False, True]


def test_repeated_hits_keep_an_entry_alive_across_stores(make_past):
    cache = two_entry_cache(make_past)
    D = (4, 4, 4, 4)
    assert cache.lookup_longest(NS, A) is not None
    cache.store(NS, C, make_past(C))  # evicts B
    assert cache.lookup_longest(NS, A) is not None
    cache.store(NS, D, make_past(D))  # evicts C, not the hit A
    assert present(cache, A, C, D) == [True, False, True]
