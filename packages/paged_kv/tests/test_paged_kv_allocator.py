"""Block states and reference counts: free, in use (held by tables), cached."""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import test_device
from gptlab_testkit.kv_storage import data_pointers
from gptlab_testkit.objects import assert_same_objects, reported

pytestmark = [pytest.mark.owner("block_allocator"), pytest.mark.contract]

A = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]  # two full blocks and a partial one


def test_new_cache_preallocates_zero_blocks_and_holds_nothing(pool):
    storage = pool.cache.storage

    assert len(storage) == 2
    for key, value in storage:
        for tensor in (key, value):
            assert tensor.shape == (8, 2, 4, 3)
            assert tensor.dtype == torch.float32
            assert tensor.device.type == test_device().type
            assert not tensor.any(), "fresh blocks must be zeros"
    stats = pool.cache.stats
    assert (stats.used_blocks, stats.cached_blocks, stats.free_blocks) == (0, 0, 8)
    assert stats.bytes_held == 0


def test_append_takes_one_block_per_started_block_and_counts_its_holder(pool):
    pool.admit("a", A)
    pool.append({"a": A})

    table = pool.cache.block_table("a")
    assert len(table) == 3 and len(set(table)) == 3
    assert all(pool.cache.ref_count(block) == 1 for block in table)
    stats = pool.cache.stats
    assert (stats.used_blocks, stats.free_blocks) == (3, 5)
    assert stats.bytes_held == 3 * pool.block_bytes


def test_table_grows_by_one_block_exactly_when_the_last_one_fills(pool):
    pool.admit("a", [1])
    sizes = []
    for token in range(9):
        pool.append({"a": [token]})
        sizes.append(len(pool.cache.block_table("a")))

    assert sizes == [1, 1, 1, 1, 2, 2, 2, 2, 3]


def test_shared_blocks_count_every_table_that_holds_them(pool):
    pool.admit("a", A)
    pool.append({"a": A})
    pool.admit("b", [*A[:8], 99])
    pool.admit("c", [*A[:8], 98])

    shared = pool.cache.block_table("a")[:2]
    assert pool.cache.block_table("b") == shared
    assert all(pool.cache.ref_count(block) == 3 for block in shared)
    assert pool.cache.ref_count(pool.cache.block_table("a")[2]) == 1
    assert pool.cache.stats.used_blocks == 3


def test_freeing_every_request_leaves_no_block_in_use(pool):
    pool.admit("a", A)
    pool.append({"a": A})
    pool.admit("b", [*A[:8], 99, 98])
    pool.append({"b": [99, 98]})
    pool.fork("b", "c")
    pool.append({"c": [7]})

    for rid in ("a", "b", "c"):
        pool.free(rid)

    stats = pool.cache.stats
    assert stats.used_blocks == 0
    assert stats.cached_blocks + stats.free_blocks == 8
    assert all(pool.cache.ref_count(block) == 0 for block in range(8))
    # Two full blocks were published; the partial ones (a's, b's and c's) are free again.
    assert stats.cached_blocks == 2
    assert stats.bytes_held == 2 * pool.block_bytes


def test_freed_partial_block_returns_to_the_free_queue(pool):
    pool.admit("a", [1, 2])
    pool.append({"a": [1, 2]})
    pool.free("a")

    stats = pool.cache.stats
    assert (stats.used_blocks, stats.cached_blocks, stats.free_blocks) == (0, 0, 8)


@pytest.mark.rejection
def test_append_beyond_the_pool_raises_runtime_error_and_changes_nothing(pool):
    pool.fill("big", blocks=6, seed=1)
    pool.admit("a", [1])
    storage = [t.clone() for pair in pool.cache.storage for t in pair]
    counts, table = pool.counts(), pool.cache.block_table("big")

    with pytest.raises(RuntimeError):
        pool.cache.append(
            ["a"],
            pool.long([list(range(12))]),
            pool.long([list(range(12))]),
            tuple((torch.ones(1, 2, 12, 3, device=test_device()),) * 2 for _ in range(2)),
        )

    assert pool.counts() == counts
    assert pool.cache.block_table("big") == table
    assert pool.cache.cache_length("a") == 0 and pool.cache.block_table("a") == ()
    for now, was in zip((t for pair in pool.cache.storage for t in pair), storage, strict=True):
        assert torch.equal(now, was), "a rejected append wrote the pool"


def test_storage_objects_and_pointers_are_stable(pool):
    tensors = [t for pair in pool.cache.storage for t in pair]
    pointers = data_pointers(pool.cache.storage)

    pool.admit("a", A)
    pool.append({"a": A})
    pool.fork("a", "b")
    pool.append({"b": [5]})
    pool.free("a")
    pool.fill("c", blocks=5, seed=2)

    now = [t for pair in pool.cache.storage for t in pair]
    assert_same_objects(now, tensors, "storage rebound")
    reallocated = "storage reallocated" + reported(now)
    assert data_pointers(pool.cache.storage) == pointers, reallocated
