"""Copy on write: a block held by several tables is copied before anyone writes it."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.owner("copy_on_write"), pytest.mark.contract]

PROMPT = [1, 2, 3, 4, 5, 6]  # a full block and a half-filled one


@pytest.fixture
def forked(pool):
    pool.admit("parent", PROMPT)
    pool.append({"parent": PROMPT})
    pool.fork("parent", "child")
    return pool


def test_fork_shares_every_block_including_the_partial_one(forked):
    table = forked.cache.block_table("parent")

    assert forked.cache.block_table("child") == table
    assert forked.cache.cache_length("child") == len(PROMPT)
    assert [forked.cache.ref_count(block) for block in table] == [2, 2]
    forked.assert_stored()


def test_child_writing_the_shared_block_copies_it_first(forked):
    shared = forked.cache.block_table("parent")

    forked.append({"child": [7]})

    child = forked.cache.block_table("child")
    assert forked.cache.block_table("parent") == shared
    assert child[0] == shared[0] and child[1] != shared[1]
    assert [forked.cache.ref_count(b) for b in shared] == [2, 1]
    assert forked.cache.ref_count(child[1]) == 1
    forked.assert_stored()


def test_parent_and_child_diverging_in_one_call_keep_their_own_tokens(forked):
    forked.append({"parent": [8, 9, 10], "child": [11, 12, 13]})
    forked.append({"child": [14], "parent": [15]})

    parent, child = forked.cache.block_table("parent"), forked.cache.block_table("child")
    assert parent[0] == child[0]
    assert not set(parent[1:]) & set(child[1:])
    forked.assert_stored()


def test_fork_at_a_block_boundary_needs_no_copy(pool):
    pool.admit("parent", PROMPT[:4])
    pool.append({"parent": PROMPT[:4]})
    pool.fork("parent", "child")

    pool.append({"parent": [5], "child": [6]})

    assert pool.cache.stats.used_blocks == 3
    pool.assert_stored()


def test_freeing_the_parent_leaves_the_child_its_blocks(forked):
    forked.free("parent")
    forked.append({"child": [7, 8, 9]})

    forked.assert_stored("child")
    assert all(forked.cache.ref_count(b) == 1 for b in forked.cache.block_table("child"))
