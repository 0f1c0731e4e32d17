"""Automatic prefix caching: the longest chain of full blocks, LRU reuse, counters, bytes."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.owner("paged_prefix_cache"), pytest.mark.contract]

PROMPT = list(range(1, 11))  # 10 tokens: two full blocks of 4 and a partial one


def test_longest_chain_of_cached_full_blocks_is_reused_without_a_copy(pool):
    pool.admit("a", PROMPT)
    pool.append({"a": PROMPT})

    reused = pool.admit("b", [*PROMPT[:8], 30, 31, 32])
    pool.append({"b": [30, 31, 32]})

    assert reused == 8
    assert pool.cache.block_table("b")[:2] == pool.cache.block_table("a")[:2]
    assert pool.cache.stats.used_blocks == 4  # a's three plus b's own third block
    pool.assert_stored()


def test_branch_inside_a_block_reuses_only_the_blocks_before_it(pool):
    pool.admit("a", PROMPT)
    pool.append({"a": PROMPT})

    reused = pool.admit("b", [*PROMPT[:6], 40, 41, 42, 43])

    assert reused == 4
    assert pool.cache.block_table("b") == pool.cache.block_table("a")[:1]


def test_reuse_leaves_at_least_one_prompt_token_to_compute(pool):
    prompt = PROMPT[:8]
    pool.admit("a", prompt)
    pool.append({"a": prompt})

    assert pool.admit("b", prompt) == 4  # the whole prompt is cached; one block is recomputed
    assert pool.admit("c", prompt[:5]) == 4
    assert pool.admit("d", prompt[:4]) == 0


def test_partial_last_block_is_never_shared(pool):
    pool.admit("a", PROMPT[:6])
    pool.append({"a": PROMPT[:6]})

    reused = pool.admit("b", [*PROMPT[:6], 50])
    pool.append({"b": [*PROMPT[reused:6], 50]})
    pool.append({"a": [60]})  # a keeps writing its own partial block

    assert reused == 4
    assert pool.cache.block_table("b")[1] != pool.cache.block_table("a")[1]
    pool.assert_stored()


def test_decode_tokens_that_fill_a_block_publish_it(pool):
    pool.admit("a", PROMPT[:3])
    pool.append({"a": PROMPT[:3]})
    for token in PROMPT[3:9]:  # one token at a time, as decode does
        pool.append({"a": [token]})

    assert pool.admit("b", PROMPT) == 8


def test_freed_blocks_stay_cached_and_are_reused_with_their_contents(pool):
    pool.admit("a", PROMPT)
    pool.append({"a": PROMPT})
    blocks = pool.cache.block_table("a")[:2]
    pool.free("a")
    assert pool.cache.stats.cached_blocks == 2

    reused = pool.admit("b", [*PROMPT, 70])
    pool.append({"b": ([*PROMPT, 70])[reused:]})

    assert reused == 8
    assert pool.cache.block_table("b")[:2] == blocks
    assert pool.cache.stats.cached_blocks == 0
    pool.assert_stored()


def test_eviction_takes_the_least_recently_freed_blocks_first(pool):
    first, second = [1, 2, 3, 4, 5, 6, 7, 8], [11, 12, 13, 14, 15, 16, 17, 18]
    for rid, prompt in (("first", first), ("second", second)):
        pool.admit(rid, prompt)
        pool.append({rid: prompt})
    pool.free("first")
    pool.free("second")  # 4 cached blocks, 4 free

    pool.fill("new", blocks=6, seed=3)  # takes the 4 free blocks, then evicts 2

    assert pool.cache.stats.evictions == 2
    assert pool.admit("second again", [*second, 0]) == 8
    assert pool.admit("first again", [*first, 0]) == 0


def test_reuse_makes_a_cached_block_recent_again(pool):
    first, second = [1, 2, 3, 4, 5, 6, 7, 8], [11, 12, 13, 14, 15, 16, 17, 18]
    for rid, prompt in (("first", first), ("second", second)):
        pool.admit(rid, prompt)
        pool.append({rid: prompt})
    pool.free("first")
    pool.free("second")
    pool.admit("first again", [*first, 0])  # first's blocks are in use, then freed last
    pool.free("first again")

    pool.fill("new", blocks=6, seed=4)

    assert pool.admit("first third time", [*first, 0]) == 8
    assert pool.admit("second again", [*second, 0]) == 0


@pytest.mark.rejection
def test_a_block_in_use_is_never_evicted(pool):
    pool.admit("a", PROMPT[:8])
    pool.append({"a": PROMPT[:8]})
    pool.free("a")
    pool.admit("b", [*PROMPT[:8], 80])  # holds a's two cached blocks again
    pool.fill("c", blocks=6, seed=5)  # exactly the six other blocks

    with pytest.raises(RuntimeError):
        pool.fill("d", blocks=1, seed=6)

    pool.assert_stored("b", "c")


def test_counters_count_hits_misses_evictions_and_cached_blocks(pool):
    pool.admit("a", PROMPT)  # cap 8: two eligible blocks, nothing cached
    pool.append({"a": PROMPT})
    pool.admit("b", [*PROMPT[:8], 1, 2, 3, 4, 5])  # cap 12: two hits, one miss
    pool.free("a")

    stats = pool.cache.stats
    assert (stats.hits, stats.misses, stats.evictions, stats.cached_blocks) == (2, 3, 0, 0)
    pool.free("b")
    pool.fill("c", blocks=7, seed=7)
    stats = pool.cache.stats
    assert stats.evictions == 1  # 6 free blocks after b, then one of the 2 cached
    assert stats.cached_blocks == 1


@pytest.mark.parametrize("requests", [1, 3, 6])
def test_bytes_held_grow_linearly_in_unique_tokens(make_pool, requests):
    pool = make_pool(num_blocks=32)
    prefix = list(range(1, 13))  # three full blocks shared by every request
    pool.admit("warm", [*prefix, 0])
    pool.append({"warm": [*prefix, 0]})
    pool.free("warm")
    for index in range(requests):
        rid = f"r{index}"
        prompt = [*prefix, 100 + index, 200 + index]  # a private two-token suffix
        reused = pool.admit(rid, prompt)
        pool.append({rid: prompt[reused:]})

    # three shared blocks, plus one private partial block per request
    assert pool.cache.stats.used_blocks == 3 + requests
    assert pool.cache.stats.bytes_held == (3 + requests) * pool.block_bytes


def test_readmitted_cached_blocks_are_held_not_cached(pool):
    pool.admit("a", PROMPT[:8])
    pool.append({"a": PROMPT[:8]})
    pool.free("a")
    assert pool.cache.stats.cached_blocks == 2

    pool.admit("b", [*PROMPT[:8], 80])

    stats = pool.cache.stats
    assert (stats.used_blocks, stats.cached_blocks, stats.free_blocks) == (2, 0, 6)
    assert [pool.cache.ref_count(block) for block in pool.cache.block_table("b")] == [1, 1]


def test_a_readmitted_block_outlives_blocks_cached_after_it(pool):
    """b re-admits a's cached blocks; blocks cached later are evicted, never b's."""
    pool.admit("a", PROMPT[:8])
    pool.append({"a": PROMPT[:8]})
    pool.free("a")
    pool.admit("b", [*PROMPT[:8], 80])  # a's blocks: the oldest ever cached, now held
    pool.fill("c", blocks=6, seed=7)
    pool.free("c")  # six blocks cached after a's

    pool.fill("d", blocks=5, seed=8)  # evicts five of c's
    pool.assert_stored("b", "d")
    pool.append({"b": [80]})  # b's next block: the last of c's

    assert pool.cache.stats.evictions == 6
    pool.assert_stored("b", "d")


def test_blocks_freed_one_request_at_a_time_are_evicted_in_that_order(pool):
    prompts = {"x": [1, 2, 3, 4], "y": [5, 6, 7, 8], "z": [9, 10, 11, 12]}
    for rid, prompt in prompts.items():
        pool.admit(rid, prompt)
        pool.append({rid: prompt})
    for rid in prompts:  # x's block is released first, z's last
        pool.free(rid)

    pool.fill("new", blocks=6, seed=9)  # the 5 free blocks, then one eviction: x's

    assert pool.cache.stats.evictions == 1
    assert pool.admit("z again", [*prompts["z"], 0]) == 4
    assert pool.admit("y again", [*prompts["y"], 0]) == 4
    assert pool.admit("x again", [*prompts["x"], 0]) == 0
