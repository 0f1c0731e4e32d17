"""Extension: lifetime counters and the K/V bytes the snapshots hold."""

from __future__ import annotations

import dataclasses

import pytest

from gptlab_testkit import candidate

pc = candidate("PREFIX_CACHE_MODULE")
NS = pc.PrefixCacheNamespace("model-a", "cache-0")

pytestmark = pytest.mark.extension

PROMPT = (3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8)
A, B = (1, 1, 1, 1), (2, 2, 2, 2)


def past_bytes(past):
    return sum(t.numel() * t.element_size() for layer in past for t in layer)


@pytest.mark.owner("prefix_lru")
def test_fresh_cache_counts_nothing():
    stats = pc.PrefixCache(block_size=4, max_entries=4).stats
    assert (stats.hits, stats.misses, stats.evictions, stats.reused_tokens) == (0, 0, 0, 0)
    assert (stats.entry_count, stats.stored_tokens, stats.kv_bytes) == (0, 0, 0)
    assert stats.lookups == 0 and stats.hit_rate == 0.0


@pytest.mark.owner("prefix_lru")
def test_hits_misses_and_reused_tokens_are_counted(make_past):
    cache = pc.PrefixCache(block_size=4, max_entries=8)
    cache.store(NS, PROMPT, make_past(PROMPT))
    cache.lookup_longest(NS, PROMPT)  # hit, 12 tokens
    cache.lookup_longest(NS, PROMPT[:7])  # hit, 4 tokens
    cache.lookup_longest(NS, (0,) * 8)  # miss
    cache.lookup_longest(NS, PROMPT, max_length=3)  # miss: nothing aligned fits
    stats = cache.stats
    assert (stats.hits, stats.misses, stats.reused_tokens) == (2, 2, 16)
    assert stats.lookups == 4 and stats.hit_rate == 0.5


@pytest.mark.owner("prefix_lru")
def test_evictions_are_counted_and_clear_is_not_an_eviction(make_past):
    cache = pc.PrefixCache(block_size=4, max_entries=1)
    cache.store(NS, A, make_past(A))
    cache.store(NS, B, make_past(B))
    assert cache.stats.evictions == 1
    cache.clear()
    assert cache.stats.evictions == 1
    assert cache.stats.entry_count == 0


@pytest.mark.owner("prefix_lru")
def test_stats_is_a_frozen_snapshot(make_past):
    cache = pc.PrefixCache(block_size=4, max_entries=4)
    before = cache.stats
    cache.store(NS, A, make_past(A))
    cache.lookup_longest(NS, A)
    assert before.hits == 0 and before.entry_count == 0
    with pytest.raises(dataclasses.FrozenInstanceError):
        before.hits = 5


@pytest.mark.owner("snapshot_ownership")
def test_full_prefix_snapshots_duplicate_earlier_blocks(make_past):
    cache = pc.PrefixCache(block_size=4, max_entries=8)
    source = make_past(PROMPT)
    cache.store(NS, PROMPT, source)
    # Entries 4, 8 and 12 hold 4 + 8 + 12 = 24 token slots for a 12-token prompt.
    assert cache.stats.stored_tokens == 24
    assert cache.kv_bytes == cache.stats.kv_bytes == past_bytes(source) * 24 // 12


@pytest.mark.owner("snapshot_ownership")
def test_bytes_follow_evictions_and_clear(make_past):
    cache = pc.PrefixCache(block_size=4, max_entries=1)
    cache.store(NS, A, make_past(A))
    one_entry = cache.kv_bytes
    cache.store(NS, B, make_past(B))
    assert cache.kv_bytes == one_entry == past_bytes(make_past(B))
    cache.store(NS, A, make_past(A))  # evicts B, re-inserts A
    assert cache.kv_bytes == one_entry
    cache.clear()
    assert cache.kv_bytes == 0 and cache.stats.stored_tokens == 0
