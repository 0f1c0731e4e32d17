"""P28 run_collectives(x) -> (reduced, gathered, scattered) on two real Gloo ranks.

The `ranks` fixture (conftest.py) forks two ranks once for this module; a job below runs
on both, each with its own x. Inputs are small integers, so every sum is exact.
"""

from __future__ import annotations

import datetime
import time

import pytest
import torch

from gptlab_testkit import candidate

drill = candidate("DRILL_P28_MODULE")

pytestmark = [pytest.mark.owner("p28")]  # each test says contract or extension


def shard(rank: int, shape: tuple[int, ...], dtype=torch.float32) -> torch.Tensor:
    """Rank r's x: distinct small integers per rank and element (exact in any sum)."""
    n = 1
    for size in shape:
        n *= size
    return (torch.arange(n) * (rank + 2) + 100 * rank).reshape(shape).to(dtype)


# ---- jobs: module-level, run as job(rank, *args) on each rank ----


def collectives(rank, shape, dtype):
    x = shard(rank, shape, dtype)
    before = x.clone()
    reduced, gathered, scattered = drill.run_collectives(x)
    return {"reduced": reduced.clone(), "gathered": gathered.clone(),
            "scattered": scattered.clone(), "x kept": torch.equal(x, before)}  # fmt: skip


def twice(rank, shape, dtype):
    return [collectives(rank, shape, dtype) for _ in range(2)]


def rank_one_skips_the_all_reduce(rank):
    # A group with a short timeout of its own keeps this check fast; the default group's
    # timeout (conftest.GLOO_TIMEOUT_S) bounds a candidate the same way.
    group = torch.distributed.new_group(timeout=datetime.timedelta(seconds=0.5))
    if rank == 0:
        torch.distributed.all_reduce(torch.ones(2), group=group)
    return "returned"


def run(ranks, shape=(4, 3), dtype=torch.float32, job="collectives"):
    return ranks.run(job, [(shape, dtype), (shape, dtype)])


def want(shape, dtype):
    xs = [shard(r, shape, dtype) for r in range(2)]
    total = xs[0] + xs[1]
    half = shape[0] // 2
    return total, torch.cat(xs), [total[:half], total[half:]]


@pytest.mark.contract
def test_all_reduce_gives_every_rank_the_exact_sum(ranks):
    total, _, _ = want((4, 3), torch.float32)
    for rank, result in enumerate(run(ranks)):
        assert torch.equal(result["reduced"], total), f"rank {rank}: all_reduce {result['reduced']}"


@pytest.mark.contract
def test_all_gather_gives_every_rank_both_shards_in_rank_order(ranks):
    _, gathered, _ = want((4, 3), torch.float32)
    for rank, result in enumerate(run(ranks)):
        assert torch.equal(result["gathered"], gathered), f"rank {rank}: {result['gathered']}"


@pytest.mark.contract
def test_reduce_scatter_gives_each_rank_its_own_slice_of_the_sum(ranks):
    _, _, slices = want((4, 3), torch.float32)
    for rank, result in enumerate(run(ranks)):
        assert torch.equal(result["scattered"], slices[rank]), f"rank {rank}: {result['scattered']}"


@pytest.mark.contract
def test_the_callers_input_is_only_read_on_every_rank(ranks):
    for rank, result in enumerate(run(ranks)):
        assert result["x kept"], f"rank {rank}: run_collectives wrote the caller's x"


@pytest.mark.contract
@pytest.mark.parametrize(
    ("shape", "dtype"),
    [((2,), torch.float32), ((6, 2, 2), torch.float32), ((4, 5), torch.int64)],
    ids=["1-D", "3-D", "int64"],
)
def test_other_shapes_and_integer_dtypes_are_exact(ranks, shape, dtype):
    total, gathered, slices = want(shape, dtype)
    for rank, result in enumerate(run(ranks, shape, dtype)):
        assert result["reduced"].dtype == dtype, f"rank {rank}: {result['reduced'].dtype}"
        assert torch.equal(result["reduced"], total), f"rank {rank}: all_reduce"
        assert torch.equal(result["gathered"], gathered), f"rank {rank}: all_gather"
        assert torch.equal(result["scattered"], slices[rank]), f"rank {rank}: reduce_scatter"


@pytest.mark.contract
def test_two_calls_in_a_row_keep_both_ranks_in_step(ranks):
    total, gathered, slices = want((4, 3), torch.float32)
    for rank, results in enumerate(run(ranks, job="twice")):
        for result in results:
            assert torch.equal(result["reduced"], total), f"rank {rank}: all_reduce"
            assert torch.equal(result["gathered"], gathered), f"rank {rank}: all_gather"
            assert torch.equal(result["scattered"], slices[rank]), f"rank {rank}: reduce_scatter"


@pytest.mark.contract
def test_rows_not_divisible_by_the_world_size_are_rejected_before_any_collective(ranks):
    outcomes = ranks.outcomes("collectives", [((3, 2), torch.float32)] * 2)
    for rank, (kind, detail, calls) in enumerate(outcomes):
        assert kind == "raised" and detail[0] == "ValueError", f"rank {rank}: {kind} {detail}"
        assert "x" in detail[1] or "3" in detail[1], f"rank {rank}: message {detail[1]!r}"
        assert not calls, f"rank {rank} entered {calls} before rejecting x"


@pytest.mark.extension
def test_a_rank_left_waiting_fails_in_seconds_naming_the_rank_and_the_call(ranks):
    start = time.monotonic()
    with pytest.raises(AssertionError, match=r"rank 0 .*all_reduce") as failure:
        ranks.run("rank_one_skips_the_all_reduce", [(), ()])
    assert time.monotonic() - start < 10, f"took {time.monotonic() - start:.1f} s: {failure.value}"
