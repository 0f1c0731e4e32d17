"""The key: (namespace, absolute start position, exact prefix tokens) at block boundaries."""

from __future__ import annotations

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gptlab_testkit import assert_past_close, candidate

pc = candidate("PREFIX_CACHE_MODULE")
NS = pc.PrefixCacheNamespace("model-a", "cache-0")

pytestmark = [pytest.mark.contract, pytest.mark.owner("prefix_key")]

PROMPT = (3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8)


def assert_match(match, tokens, make_past, start=0):
    """The match is exactly `tokens` with the K/V that prompt has at that origin."""
    assert match is not None, f"expected a {len(tokens)}-token match, got None"
    assert tuple(match.tokens) == tuple(tokens)
    assert match.prefix_length == len(tokens)
    assert_past_close(match.past_key_values, make_past(tokens, start), "match", atol=0, rtol=0)


def test_lookup_returns_longest_complete_aligned_prefix(make_past):
    cache = pc.PrefixCache(block_size=4, max_entries=16)
    prompt = PROMPT[:10]
    cache.store(NS, prompt, make_past(prompt))
    assert_match(cache.lookup_longest(NS, prompt), prompt[:8], make_past)


def test_partial_tail_makes_no_entry(make_past):
    cache = pc.PrefixCache(block_size=4, max_entries=16)
    cache.store(NS, PROMPT[:7], make_past(PROMPT[:7]))
    assert cache.entry_count == 1
    cache.store(NS, (7, 7, 7), make_past((7, 7, 7)))
    assert cache.entry_count == 1
    assert cache.lookup_longest(NS, (7, 7, 7)) is None


def test_every_block_boundary_gets_an_entry(make_past):
    cache = pc.PrefixCache(block_size=4, max_entries=16)
    cache.store(NS, PROMPT, make_past(PROMPT))
    assert cache.entry_count == 3
    for length in (4, 8, 12):
        match = cache.lookup_longest(NS, PROMPT, max_length=length)
        assert_match(match, PROMPT[:length], make_past)


def test_branched_prompts_share_their_exact_common_entry(make_past):
    cache = pc.PrefixCache(block_size=4, max_entries=16)
    first = (*PROMPT[:8], 0, 0, 0, 0)
    second = (*PROMPT[:8], 1, 1, 1, 1)
    cache.store(NS, first, make_past(first))
    cache.store(NS, second, make_past(second))
    assert cache.entry_count == 4  # 4 and 8 shared, one 12 each
    assert_match(cache.lookup_longest(NS, first), first, make_past)
    assert_match(cache.lookup_longest(NS, second), second, make_past)
    third = (*PROMPT[:8], 2, 2, 2, 2)
    assert_match(cache.lookup_longest(NS, third), PROMPT[:8], make_past)


def test_branch_inside_a_block_reuses_only_the_blocks_before_it(make_past):
    cache = pc.PrefixCache(block_size=4, max_entries=16)
    cache.store(NS, PROMPT, make_past(PROMPT))
    branch = PROMPT[:6] + (0,) * 6
    assert_match(cache.lookup_longest(NS, branch), PROMPT[:4], make_past)
    assert cache.lookup_longest(NS, (0, *PROMPT[1:])) is None


def test_namespace_is_part_of_the_key(make_past):
    cache = pc.PrefixCache(block_size=4, max_entries=16)
    cache.store(NS, PROMPT, make_past(PROMPT))
    assert cache.lookup_longest(pc.PrefixCacheNamespace("model-b", "cache-0"), PROMPT) is None
    assert cache.lookup_longest(pc.PrefixCacheNamespace("model-a", "cache-1"), PROMPT) is None
    equal_namespace = pc.PrefixCacheNamespace("model-a", "cache-0")
    assert_match(cache.lookup_longest(equal_namespace, PROMPT), PROMPT, make_past)


def test_each_namespace_keeps_its_own_snapshot(make_past):
    cache = pc.PrefixCache(block_size=4, max_entries=16)
    other = pc.PrefixCacheNamespace("model-b", "cache-0")
    prompt = PROMPT[:4]
    cache.store(NS, prompt, make_past(prompt, start=0))
    cache.store(other, prompt, make_past(prompt, start=5))  # other model: other numbers
    assert cache.entry_count == 2
    assert_match(cache.lookup_longest(NS, prompt), prompt, make_past, start=0)
    assert_match(cache.lookup_longest(other, prompt), prompt, make_past, start=5)


def test_start_position_is_part_of_the_key(make_past):
    cache = pc.PrefixCache(block_size=4, max_entries=16)
    cache.store(NS, PROMPT, make_past(PROMPT, start=3), start_position=3)
    assert cache.lookup_longest(NS, PROMPT) is None
    assert cache.lookup_longest(NS, PROMPT, start_position=4) is None
    assert_match(cache.lookup_longest(NS, PROMPT, start_position=3), PROMPT, make_past, start=3)


def test_each_origin_keeps_its_own_snapshot(make_past):
    cache = pc.PrefixCache(block_size=4, max_entries=16)
    prompt = PROMPT[:8]
    cache.store(NS, prompt, make_past(prompt, start=0), start_position=0)
    cache.store(NS, prompt, make_past(prompt, start=2), start_position=2)
    assert cache.entry_count == 4
    assert_match(cache.lookup_longest(NS, prompt, start_position=0), prompt, make_past, start=0)
    assert_match(cache.lookup_longest(NS, prompt, start_position=2), prompt, make_past, start=2)


def test_lookup_rounds_max_length_down_to_a_block(make_past):
    cache = pc.PrefixCache(block_size=4, max_entries=16)
    cache.store(NS, PROMPT, make_past(PROMPT))
    assert_match(cache.lookup_longest(NS, PROMPT, max_length=11), PROMPT[:8], make_past)
    assert_match(cache.lookup_longest(NS, PROMPT, max_length=5), PROMPT[:4], make_past)
    assert_match(cache.lookup_longest(NS, PROMPT, max_length=99), PROMPT, make_past)
    assert cache.lookup_longest(NS, PROMPT, max_length=3) is None
    assert cache.lookup_longest(NS, PROMPT, max_length=0) is None


def test_lookup_rounds_an_unaligned_prompt_down_to_a_block(make_past):
    cache = pc.PrefixCache(block_size=4, max_entries=16)
    cache.store(NS, PROMPT[:8], make_past(PROMPT[:8]))
    assert_match(cache.lookup_longest(NS, PROMPT[:11]), PROMPT[:8], make_past)
    assert_match(cache.lookup_longest(NS, PROMPT[:7]), PROMPT[:4], make_past)


def test_tensor_and_sequence_tokens_key_alike(make_past, as_tensor):
    cache = pc.PrefixCache(block_size=4, max_entries=16)
    cache.store(NS, as_tensor(PROMPT[:8]), make_past(PROMPT[:8]))
    assert_match(cache.lookup_longest(NS, list(PROMPT[:8])), PROMPT[:8], make_past)
    cache.store(NS, list(PROMPT), make_past(PROMPT))
    assert_match(cache.lookup_longest(NS, as_tensor(PROMPT)), PROMPT, make_past)


def test_lookup_misses_an_empty_cache(as_tensor):
    cache = pc.PrefixCache(block_size=2, max_entries=4)
    assert cache.lookup_longest(NS, PROMPT) is None
    assert cache.lookup_longest(NS, as_tensor(PROMPT)) is None


# Prompts over a two-letter vocabulary collide a lot: shared and branched prefixes.
prompts = st.lists(st.integers(0, 1), min_size=0, max_size=9).map(tuple)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    block_size=st.integers(1, 4),
    stored=st.lists(st.tuples(prompts, st.integers(0, 1)), max_size=4),
    query=prompts,
    query_start=st.integers(0, 1),
    max_length=st.none() | st.integers(0, 10),
)
def test_lookup_agrees_with_a_brute_force_search(
    make_past, block_size, stored, query, query_start, max_length
):
    cache = pc.PrefixCache(block_size=block_size, max_entries=1000)
    keys = set()
    for prompt, start in stored:
        cache.store(NS, prompt, make_past(prompt, start), start_position=start)
        boundaries = range(block_size, len(prompt) + 1, block_size)
        keys.update((start, prompt[:length]) for length in boundaries)
    limit = len(query) if max_length is None else min(max_length, len(query))
    expected = max((L for L in range(1, limit + 1) if (query_start, query[:L]) in keys), default=0)
    assert cache.entry_count == len(keys)
    match = cache.lookup_longest(NS, query, start_position=query_start, max_length=max_length)
    if expected == 0:
        assert match is None
    else:
        assert_match(match, query[:expected], make_past, start=query_start)


def test_match_tensors_hold_exactly_the_prefix(make_past):
    cache = pc.PrefixCache(block_size=4, max_entries=16)
    cache.store(NS, PROMPT, make_past(PROMPT))
    match = cache.lookup_longest(NS, PROMPT, max_length=8)
    assert match is not None
    for key, value in match.past_key_values:
        assert key.shape[2] == 8 and value.shape[2] == 8
        assert key.dtype == torch.float32
