"""P28 extension: this project's rules beyond the kit's contract (tested apart, never scored)."""

from __future__ import annotations

import time

import pytest
import torch

from gptlab_testkit import candidate
from gptlab_testkit.boundary import names_argument, names_value
from gptlab_testkit.oracles import tensor_state

drill = candidate("DRILL_P28_MODULE")

pytestmark = [pytest.mark.owner("p28"), pytest.mark.extension]

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


def disagreeing(rank, case):
    """run_collectives where the ranks' x differ; (error type, message, x unchanged)."""
    shape, dtype = {
        "dtype": ((4, 3), torch.float32 if rank == 0 else torch.int64),
        "shape": ((4, 3) if rank == 0 else (6, 3), torch.float32),
        "trailing dims": ((4, 3) if rank == 0 else (4, 3, 1), torch.float32),
    }[case]
    x = shard(rank, shape, dtype)
    before = tensor_state(x)
    try:
        drill.run_collectives(x)
    except Exception as error:
        return type(error).__name__, str(error), tensor_state(x) == before
    return "returned"


# ---- helpers in the test process ----


def run(two_ranks, shape=(4, 3), dtype=torch.float32, job="collectives"):
    return two_ranks.run(job, [(shape, dtype)] * WORLD)


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


@pytest.mark.clause("P28.11")
@pytest.mark.parametrize("case", ["3 rows", "5 rows, 3-D"])
def test_rows_not_divisible_by_the_world_size_are_rejected_before_any_collective(two_ranks, case):
    outcomes = two_ranks.outcomes("malformed", [(case,)] * WORLD)
    assert_rejected_everywhere(outcomes, ("ValueError",), "x", values=(int(case.split()[0]),))


@pytest.mark.clause("P28.12")
@pytest.mark.parametrize("case", ["a list", "a 0-d tensor"])
def test_an_x_that_is_not_a_tensor_with_rows_is_rejected_before_any_collective(two_ranks, case):
    outcomes = two_ranks.outcomes("malformed", [(case,)] * WORLD)
    assert_rejected_everywhere(outcomes, ("TypeError", "ValueError"), "x")


@pytest.mark.clause("P28.17")
@pytest.mark.parametrize(
    ("case", "mismatch"),
    [
        ("dtype", ("rank 0 passed float32 [4, 3]", "rank 1 passed int64 [4, 3]")),
        ("shape", ("rank 0 passed float32 [4, 3]", "rank 1 passed float32 [6, 3]")),
        ("trailing dims", ("rank 0 passed float32 [4, 3]", "rank 1 passed float32 [4, 3, 1]")),
    ],
)
def test_ranks_whose_x_differ_all_refuse_it_before_the_three_collectives(two_ranks, case, mismatch):
    start = time.monotonic()
    outcomes = two_ranks.outcomes("disagreeing", [(case,)] * WORLD)

    assert time.monotonic() - start < 5, f"took {time.monotonic() - start:.1f} s"
    # the same calls on every rank
    assert not two_ranks.breaks(outcomes), two_ranks.breaks(outcomes)
    for rank, outcome in enumerate(outcomes):
        assert outcome.kind == "done", f"rank {rank}: {outcome.kind} {outcome.detail}"
        assert outcome.detail != "returned", f"rank {rank} accepted x that the ranks disagree on"
        kind, message, kept = outcome.detail
        assert kind == "ValueError", f"rank {rank}: {kind}: {message}"
        assert names_argument(message, "x"), f"rank {rank}: does not name x: {message!r}"
        assert all(part in message for part in mismatch), f"rank {rank}: {message!r}"
        assert kept, f"rank {rank}: the rejected call wrote x"
        entered = [call.name for call in outcome.calls]
        assert not {"all_reduce", "reduce_scatter_tensor"} & set(entered), (
            f"rank {rank} entered {entered} before refusing x{outcome.reported}"
        )
    in_step = two_ranks.outcomes("collectives", [((4, 3), torch.float32)] * WORLD)
    assert not two_ranks.breaks(in_step)
