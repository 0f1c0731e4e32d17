"""Chained block hashes: a block is shared only under the same prefix, origin and namespace."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.owner("block_hash_chain"), pytest.mark.contract]

X, Y, Z = [1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]


def test_equal_block_after_another_prefix_is_not_shared(pool):
    pool.admit("a", X + Y + [0])
    pool.append({"a": X + Y + [0]})

    # b's second block equals a's *first* block; its parent (X) differs from a's (none).
    reused = pool.admit("b", X + X + [0])
    pool.append({"b": (X + X + [0])[reused:]})

    assert reused == 4
    table_a, table_b = pool.cache.block_table("a"), pool.cache.block_table("b")
    assert table_b[0] == table_a[0]
    assert table_b[1] not in table_a
    pool.assert_stored()


def test_block_after_a_missed_parent_is_not_reused(pool):
    pool.admit("a", X + Y + [0])
    pool.append({"a": X + Y + [0]})

    reused = pool.admit("b", Z + Y + [0])

    assert reused == 0
    assert pool.cache.block_table("b") == ()


@pytest.mark.parametrize(
    ("model_id", "cache_id", "start"),
    [("other", "c", 0), ("m", "other", 0), ("m", "c", 1)],
    ids=["model", "cache_id", "start"],
)
def test_another_namespace_or_origin_shares_nothing(pool, model_id, cache_id, start):
    pool.admit("a", X + Y + [0])
    pool.append({"a": X + Y + [0]})

    reused = pool.admit("b", X + Y + [0], start=start, model_id=model_id, cache_id=cache_id)

    assert reused == 0
    assert pool.cache.stats.hits == 0


def test_same_prefix_same_origin_shares_the_whole_chain(pool):
    pool.admit("a", X + Y + Z, start=2)
    pool.append({"a": X + Y + Z})

    reused = pool.admit("b", X + Y + Z + [0], start=2)

    assert reused == 12
    assert pool.cache.block_table("b") == pool.cache.block_table("a")


def test_two_namespaces_keep_their_own_chains_side_by_side(pool):
    """The same prompt computed under two namespaces: each later admission reuses its own."""
    pool.admit("m", X + Y + [0])
    pool.append({"m": X + Y + [0]})
    pool.admit("n", X + Y + [0], model_id="other")
    pool.append({"n": X + Y + [0]})  # the other model's K/V for the same tokens

    assert pool.admit("m again", X + Y + [1]) == 8
    assert pool.admit("n again", X + Y + [1], model_id="other") == 8

    cache = pool.cache
    assert cache.block_table("m again") == cache.block_table("m")[:2]
    assert cache.block_table("n again") == cache.block_table("n")[:2]
    assert set(cache.block_table("m")).isdisjoint(cache.block_table("n"))
    pool.assert_stored()
