"""P28 run_collectives(x) -> (reduced, gathered, scattered) on two real Gloo ranks.

The `two_ranks` fixture (`gptlab_testkit.rank_pair`) forks two ranks once for this
module; a job below runs on both, each with its own x. Inputs are small integers, so every
sum is exact. Every run also checks the two rules no single result shows: the ranks issued
the same collectives in the same order, and every async handle was waited on
(`TwoRanks.run`). A job's own `dist` calls go where the candidate runs (`torch_beside`).
"""

from __future__ import annotations

import inspect
import time

import pytest
import torch

from gptlab_testkit import candidate
from gptlab_testkit.boundary import names_argument, names_value
from gptlab_testkit.oracles import tensor_state
from gptlab_testkit.rank_pair import torch_beside

drill = candidate("DRILL_P28_MODULE")
dist = torch_beside(drill, "torch.distributed")  # the group the candidate's code is in

pytestmark = [pytest.mark.owner("p28")]  # each test says contract or extension

WORLD = 2


def shard(rank: int, shape: tuple[int, ...], dtype=torch.float32, step: int = 0) -> torch.Tensor:
    """Rank r's x: distinct small integers per rank, element and step (exact in any sum)."""
    n = 1
    for size in shape:
        n *= size
    return (torch.arange(n) * (rank + 2 + step) + 100 * rank - 7 * step).reshape(shape).to(dtype)


# ---- jobs: module-level, run as job(rank, *args) on each rank ----


def collectives(rank, shape, dtype, step=0):
    x = shard(rank, shape, dtype, step)
    before = tensor_state(x)
    reduced, gathered, scattered = drill.run_collectives(x)
    return {"reduced": reduced.clone(), "gathered": gathered.clone(),
            "scattered": scattered.clone(), "x kept": tensor_state(x) == before}  # fmt: skip


def on_a_group_of_its_own(rank, shape, dtype):
    groups = [dist.new_group([r]) for r in range(WORLD)]  # every rank creates every group
    x = shard(rank, shape, dtype)
    before = tensor_state(x)
    reduced, gathered, scattered = drill.run_collectives(x, group=groups[rank])
    return {"x": x, "reduced": reduced.clone(), "gathered": gathered.clone(),
            "scattered": scattered.clone(), "x kept": tensor_state(x) == before}  # fmt: skip


def twice(rank, shape, dtype):
    return [collectives(rank, shape, dtype, step) for step in range(2)]


def malformed(rank, case):
    """run_collectives on a malformed x; (error type, message, x unchanged) or 'returned'."""
    x = {
        "3 rows": lambda: shard(rank, (3, 2)),
        "5 rows, 3-D": lambda: shard(rank, (5, 2, 2)),
        "a list": lambda: shard(rank, (4, 2)).tolist(),
        "a 0-d tensor": lambda: torch.tensor(float(rank + 1)),
        "meta": lambda: torch.empty(4, 2, device="meta"),
        "bool": lambda: torch.ones(4, 2, dtype=torch.bool),
        "complex": lambda: torch.ones(4, 2, dtype=torch.complex64),
    }[case]()
    before = tensor_state(x) if isinstance(x, torch.Tensor) else repr(x)
    try:
        drill.run_collectives(x)
    except Exception as error:
        after = tensor_state(x) if isinstance(x, torch.Tensor) else repr(x)
        return type(error).__name__, str(error), after == before
    return "returned"


def with_a_group_of_the_wrong_kind(rank):
    try:
        drill.run_collectives(shard(rank, (4, 2)), "gloo")
    except Exception as error:
        return type(error).__name__, str(error)
    return "returned"


def rank_one_skips_the_all_reduce(rank):
    # Rank 0 waits for a peer that never comes: Gloo's timeout (rank_pair.GLOO_TIMEOUT_S)
    # ends the wait, as it bounds a candidate's.
    if rank == 0:
        dist.all_reduce(torch.ones(2))
    return "returned"


def reversed_on_rank_one(rank):
    """all_reduce and reduce_scatter swapped on rank 1: Gloo pairs them, the numbers agree."""
    x = shard(rank, (4,))
    reduced, gathered, scattered = x.clone(), x.new_empty(8), x.new_empty(2)
    calls = [
        lambda: dist.all_reduce(reduced),
        lambda: dist.all_gather_into_tensor(gathered, x),
        lambda: dist.reduce_scatter_tensor(scattered, x),
    ]
    for call in calls if rank == 0 else calls[::-1]:
        call()
    return "returned"


def leaves_a_handle_unwaited(rank):
    x = shard(rank, (4,))
    dist.all_reduce(x, async_op=True).wait()
    dist.all_gather_into_tensor(x.new_empty(8), x, async_op=True)  # never waited
    return "returned"


def waits_through_the_future(rank):
    x = shard(rank, (4,))
    dist.all_reduce(x, async_op=True).get_future().wait()
    return "returned"


def disagreeing_dtypes(rank):
    # Straight to the collective, as a candidate that never compares the ranks' x would.
    dist.all_reduce(shard(rank, (4, 3), torch.float32 if rank == 0 else torch.int64))
    return "returned"


def disagreeing_shapes(rank):
    dist.all_reduce(shard(rank, (4, 3) if rank == 0 else (6, 3)))
    return "returned"


# ---- helpers in the test process ----


def run(two_ranks, shape=(4, 3), dtype=torch.float32, job="collectives"):
    return two_ranks.run(job, [(shape, dtype)] * WORLD)


def want(shape, dtype, step=0):
    xs = [shard(r, shape, dtype, step) for r in range(WORLD)]
    total = xs[0] + xs[1]
    part = shape[0] // WORLD
    return total, torch.cat(xs), [total[r * part : (r + 1) * part] for r in range(WORLD)]


def check_results(rank, result, shape, dtype, step=0):
    total, gathered, slices = want(shape, dtype, step)
    for name, expected in ("reduced", total), ("gathered", gathered), ("scattered", slices[rank]):
        got = result[name]
        assert tuple(got.shape) == tuple(expected.shape), f"rank {rank}: {name} {got.shape}"
        assert got.dtype == dtype, f"rank {rank}: {name} is {got.dtype}, x is {dtype}"
        assert torch.equal(got, expected), f"rank {rank}: {name} {got} != {expected}"


def assert_rejected_everywhere(outcomes, exc_names, argument, values=()):
    for rank, outcome in enumerate(outcomes):
        assert outcome.kind == "done", f"rank {rank}: {outcome.kind} {outcome.detail}"
        assert outcome.detail != "returned", f"rank {rank} accepted the call"
        kind, message, kept = outcome.detail
        assert kind in exc_names, f"rank {rank}: {kind}: {message}"
        named = names_argument(message, argument) or any(
            names_value(message, value) for value in values
        )
        assert named, f"rank {rank}: {kind} does not name {argument}: {message!r}"
        assert kept, f"rank {rank}: the rejected call wrote x"
        assert not outcome.calls, (
            f"rank {rank} entered {outcome.calls} before rejecting x{outcome.reported}"
        )


# ---- contract ----


@pytest.mark.contract
@pytest.mark.clause("P28.1")
def test_the_signature_takes_x_and_an_optional_group():
    signature = inspect.signature(drill.run_collectives)
    for call in ((torch.zeros(2),), (torch.zeros(2), None)):
        try:
            signature.bind(*call)
        except TypeError as error:
            raise AssertionError(f"run_collectives{signature} cannot take {call}") from error
    assert signature.bind(torch.zeros(2), group=None), "group must be accepted by keyword"


@pytest.mark.contract
@pytest.mark.clause("P28.1", "P28.4")
def test_all_reduce_gives_every_rank_the_exact_sum(two_ranks):
    total, _, _ = want((4, 3), torch.float32)
    for rank, result in enumerate(run(two_ranks)):
        assert torch.equal(result["reduced"], total), f"rank {rank}: all_reduce {result['reduced']}"


@pytest.mark.contract
@pytest.mark.clause("P28.5")
def test_all_gather_gives_every_rank_both_shards_in_rank_order(two_ranks):
    _, gathered, _ = want((4, 3), torch.float32)
    for rank, result in enumerate(run(two_ranks)):
        assert torch.equal(result["gathered"], gathered), f"rank {rank}: {result['gathered']}"


@pytest.mark.contract
@pytest.mark.clause("P28.6")
def test_reduce_scatter_gives_each_rank_its_own_slice_of_the_sum(two_ranks):
    _, _, slices = want((4, 3), torch.float32)
    for rank, result in enumerate(run(two_ranks)):
        assert torch.equal(result["scattered"], slices[rank]), f"rank {rank}: {result['scattered']}"


@pytest.mark.contract
@pytest.mark.clause("P28.13")
def test_the_callers_input_is_only_read_on_every_rank(two_ranks):
    for rank, result in enumerate(run(two_ranks)):
        assert result["x kept"], f"rank {rank}: run_collectives wrote the caller's x"


@pytest.mark.contract
@pytest.mark.clause("P28.2", "P28.3", "P28.4", "P28.5", "P28.6")
@pytest.mark.parametrize(
    ("shape", "dtype"),
    [
        ((4, 3), torch.float32),
        ((2,), torch.float32),
        ((6, 2, 2), torch.float64),
        ((4, 5), torch.int64),
        ((8, 1), torch.int32),
    ],
    ids=["2-D", "1-D", "3-D float64", "int64", "int32"],
)
def test_shapes_and_dtypes_out_follow_x_and_values_are_exact(two_ranks, shape, dtype):
    for rank, result in enumerate(run(two_ranks, shape, dtype)):
        check_results(rank, result, shape, dtype)


@pytest.mark.contract
@pytest.mark.clause("P28.9")
def test_two_calls_in_a_row_keep_both_ranks_in_step(two_ranks):
    for rank, results in enumerate(run(two_ranks, job="twice")):
        for step, result in enumerate(results):
            check_results(rank, result, (4, 3), torch.float32, step)


@pytest.mark.contract
@pytest.mark.clause("P28.10")
@pytest.mark.parametrize(
    ("shape", "dtype"), [((3, 2), torch.float32), ((4,), torch.int64)], ids=["3 rows", "int64"]
)
def test_a_group_of_one_rank_reduces_gathers_and_scatters_that_ranks_x_alone(
    two_ranks, shape, dtype
):
    # 3 rows: divisible by the group's size (1), not by the world's (2).
    jobs = [(shape, dtype)] * WORLD
    for rank, result in enumerate(two_ranks.run("on_a_group_of_its_own", jobs)):
        for name in ("reduced", "gathered", "scattered"):
            got = result[name]
            assert torch.equal(got, result["x"]), f"rank {rank}: {name} on its own group {got}"
        assert result["x kept"], f"rank {rank}: run_collectives wrote the caller's x"


@pytest.mark.contract
@pytest.mark.clause("P28.7")
def test_every_rank_issues_the_same_collectives_in_the_same_order(two_ranks):
    outcomes = two_ranks.outcomes("collectives", [((4, 3), torch.float32)] * WORLD)
    assert all(o.kind == "done" for o in outcomes), [(o.kind, o.detail) for o in outcomes]
    for rank, outcome in enumerate(outcomes):
        where = outcome.reported
        assert outcome.calls, f"rank {rank} issued no collective through torch.distributed{where}"
        assert outcome.calls == outcomes[0].calls, (
            f"rank {rank} issued {[str(c) for c in outcome.calls]}, "
            f"rank 0 {[str(c) for c in outcomes[0].calls]}{where}"
        )


@pytest.mark.contract
@pytest.mark.clause("P28.8")
def test_every_async_handle_is_waited_on_before_returning(two_ranks):
    outcomes = two_ranks.outcomes("collectives", [((6, 2), torch.int64)] * WORLD)
    for rank, outcome in enumerate(outcomes):
        assert outcome.kind == "done", f"rank {rank}: {outcome.kind} {outcome.detail}"
        assert not outcome.unwaited, (
            f"rank {rank} returned before waiting on {outcome.unwaited}{outcome.reported}"
        )


# ---- extension: the reference's own doors, and the harness itself ----


@pytest.mark.extension
@pytest.mark.clause("P28.16")
@pytest.mark.parametrize("case", ["meta", "bool", "complex"])
def test_the_reference_rejects_x_without_real_numbers_before_any_collective(two_ranks, case):
    outcomes = two_ranks.outcomes("malformed", [(case,)] * WORLD)
    assert_rejected_everywhere(outcomes, ("TypeError", "ValueError"), "x")


@pytest.mark.extension
@pytest.mark.clause("P28.16")
def test_the_reference_rejects_a_group_of_the_wrong_kind(two_ranks):
    for rank, result in enumerate(two_ranks.run("with_a_group_of_the_wrong_kind", [()] * WORLD)):
        assert result != "returned" and result[0] in ("TypeError", "ValueError"), result
        assert names_argument(result[1], "group"), f"rank {rank}: {result[1]!r}"


@pytest.mark.extension
@pytest.mark.clause("P28.7")
def test_a_rank_left_waiting_fails_in_seconds_naming_the_rank_and_the_call(two_ranks):
    start = time.monotonic()
    with pytest.raises(AssertionError, match=r"rank 1 issued nothing where rank 0 issued all_re"):
        two_ranks.run("rank_one_skips_the_all_reduce", [(), ()])
    assert time.monotonic() - start < 10, f"took {time.monotonic() - start:.1f} s"


@pytest.mark.extension
@pytest.mark.clause("P28.7")
def test_two_collectives_swapped_on_one_rank_fail_although_gloo_pairs_them(two_ranks):
    outcomes = two_ranks.outcomes("reversed_on_rank_one", [(), ()])
    assert [o.kind for o in outcomes] == ["done", "done"], "Gloo no longer pairs them"
    with pytest.raises(AssertionError, match=r"rank 1 issued reduce_scatter_tensor where rank 0"):
        two_ranks.run("reversed_on_rank_one", [(), ()])


@pytest.mark.extension
@pytest.mark.clause("P28.8")
def test_a_handle_never_waited_on_fails_naming_the_rank_and_the_collective(two_ranks):
    pattern = r"rank 0 returned before waiting on the async work of all_gather_into_tensor"
    with pytest.raises(AssertionError, match=pattern):
        two_ranks.run("leaves_a_handle_unwaited", [(), ()])
    assert two_ranks.run("waits_through_the_future", [(), ()]) == ["returned"] * WORLD


@pytest.mark.extension
@pytest.mark.clause("P28.15")
@pytest.mark.parametrize(
    ("job", "mismatch"),
    [
        ("disagreeing_dtypes", r"rank 0 passed float32 \[4, 3\].*rank 1 passed int64 \[4, 3\]"),
        ("disagreeing_shapes", r"rank 0 passed float32 \[4, 3\].*rank 1 passed float32 \[6, 3\]"),
    ],
)
def test_ranks_that_disagree_fail_in_one_line_naming_rank_collective_and_mismatch(
    two_ranks, job, mismatch
):
    start = time.monotonic()
    with pytest.raises(AssertionError, match=rf"ranks disagree in all_reduce .*{mismatch}") as got:
        two_ranks.run(job, [(), ()])
    assert "\n" not in str(got.value), f"not one line: {got.value}"
    assert time.monotonic() - start < 10, f"took {time.monotonic() - start:.1f} s"
    assert not two_ranks.breaks(two_ranks.outcomes("collectives", [((4, 3), torch.float32)] * 2))
