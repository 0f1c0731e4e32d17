"""Two real Gloo ranks on loopback for P28's suite, started once per test module.

The ranks are forked from the test process, so they hold the candidate the module loaded;
a test sends a job (the name of a module-level function, called as `job(rank, *args)`) and
each rank's arguments, and gets each rank's return value back. Every rank has two
deadlines: Gloo's own (the process group's `timeout`) and the harness's, which kills both
ranks. Either way the test fails in seconds with the rank and the collective it was in.
"""

from __future__ import annotations

import contextlib
import datetime
import functools
import multiprocessing as mp
import re
import time
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection, wait
from types import ModuleType
from typing import Any

import pytest
import torch.distributed as dist

WORLD = 2
GLOO_TIMEOUT_S = 2.0  # a collective whose peer never comes raises after this
DEADLINE_S = 8.0  # the harness kills both ranks after this, whatever they are doing
# Module-level collectives a rank reports entering (the harness names the last one).
COLLECTIVES = (
    "all_reduce", "all_gather_into_tensor", "reduce_scatter_tensor", "all_gather",
    "reduce_scatter", "all_gather_single", "reduce_scatter_single", "broadcast", "barrier",
    "all_to_all_single", "reduce", "gather", "scatter", "send", "recv",
)  # fmt: skip


class RankError(AssertionError):
    """A rank raised, hung or died: the message names the rank and its last collective."""


def _serve(rank: int, port: int, conn: Connection, module: ModuleType) -> None:
    """One rank: join the group, then run jobs until told to stop."""
    calls: list[str] = []

    def reporting(name: str, original: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(original)
        def call(*args: Any, **kwargs: Any) -> Any:
            calls.append(name)
            conn.send(("enter", f"{name} (collective #{len(calls)} of this job)"))
            return original(*args, **kwargs)

        return call

    for name in COLLECTIVES:
        if hasattr(dist, name):
            setattr(dist, name, reporting(name, getattr(dist, name)))
    store = dist.TCPStore("127.0.0.1", port, WORLD, False, timeout=datetime.timedelta(seconds=5))
    dist.init_process_group(
        "gloo", store=store, rank=rank, world_size=WORLD,
        timeout=datetime.timedelta(seconds=GLOO_TIMEOUT_S),
    )  # fmt: skip
    while (message := conn.recv()) is not None:
        job, args = message
        calls.clear()
        try:
            conn.send(("done", getattr(module, job)(rank, *args), list(calls)))
        except BaseException as error:  # every failure goes back to the test
            message = re.sub(r"\[[^\]]*\.cc:\d+\] ", "", str(error))[:300]  # gloo's source path
            conn.send(("raised", (type(error).__name__, message), list(calls)))
    dist.destroy_process_group()


class TwoRanks:
    """A pair of forked Gloo ranks; restarted after any job that could have broken it."""

    def __init__(self, module: ModuleType) -> None:
        self.module = module
        self.processes: list[Any] = []
        self.pipes: list[Connection] = []
        self.store: Any = None

    def start(self) -> None:
        ctx = mp.get_context("fork")
        # The parent hosts the rendezvous on a port the OS picked: no port race.
        self.store = dist.TCPStore("127.0.0.1", 0, WORLD + 1, True, wait_for_workers=False)
        for rank in range(WORLD):
            parent, child = ctx.Pipe()
            process = ctx.Process(
                target=_serve, args=(rank, self.store.port, child, self.module), daemon=True
            )
            process.start()
            child.close()
            self.processes.append(process)
            self.pipes.append(parent)

    def stop(self, kill: bool = False) -> None:
        for pipe, process in zip(self.pipes, self.processes, strict=True):
            if not kill and process.is_alive():
                with contextlib.suppress(OSError):  # a rank that already died
                    pipe.send(None)
            process.join(timeout=0 if kill else 2)
            if process.is_alive():
                process.kill()
                process.join()
            pipe.close()
        self.processes, self.pipes, self.store = [], [], None

    def run(self, job: str, per_rank_args: Sequence[tuple[Any, ...]]) -> list[Any]:
        """Each rank's return value; RankError naming the rank and call if one fails."""
        outcomes = self.outcomes(job, per_rank_args)
        failed = [(rank, o) for rank, o in enumerate(outcomes) if o[0] != "done"]
        if failed:
            raise RankError("; ".join(describe(rank, o) for rank, o in failed))
        return [outcome[1] for outcome in outcomes]

    def outcomes(self, job: str, per_rank_args: Sequence[tuple[Any, ...]]) -> list[tuple]:
        """Per rank: ("done", value, calls), ("raised", (type, message), calls) or
        ("hung"/"died", last collective entered, calls)."""
        if not self.processes:
            self.start()
        for pipe, args in zip(self.pipes, per_rank_args, strict=True):
            pipe.send((job, tuple(args)))
        last = ["no collective yet"] * WORLD
        entered: list[list[str]] = [[] for _ in range(WORLD)]
        outcomes: list[tuple | None] = [None] * WORLD
        deadline = time.monotonic() + DEADLINE_S
        while None in outcomes and (left := deadline - time.monotonic()) > 0:
            pending = [self.pipes[r] for r in range(WORLD) if outcomes[r] is None]
            for pipe in wait(pending, timeout=left):
                rank = self.pipes.index(pipe)  # type: ignore[arg-type]
                try:
                    message = pipe.recv()
                except EOFError:
                    outcomes[rank] = ("died", last[rank], entered[rank])
                    continue
                if message[0] == "enter":
                    last[rank] = message[1]
                    entered[rank].append(message[1].split(" ")[0])
                else:
                    outcomes[rank] = message
        for rank in range(WORLD):
            if outcomes[rank] is None:
                outcomes[rank] = ("hung", last[rank], entered[rank])
        # A pair is reusable only when every rank finished, or all refused before any call.
        clean = all(o[0] == "done" for o in outcomes) or all(  # type: ignore[index]
            o[0] == "raised" and not o[2]
            for o in outcomes  # type: ignore[index]
        )
        if not clean:
            self.stop(kill=True)
        return outcomes  # type: ignore[return-value]


def describe(rank: int, outcome: tuple) -> str:
    kind, detail, calls = outcome
    where = (
        f"in or after {calls[-1]} (collective #{len(calls)})" if calls else "before any collective"
    )
    if kind == "raised":
        return f"rank {rank} raised {detail[0]} {where}: {detail[1]}"
    if kind == "hung":
        return f"rank {rank} did not finish within {DEADLINE_S:.0f} s; it was in {detail}"
    return f"rank {rank} died; it was last in {detail}"


@pytest.fixture(scope="module")
def ranks(request: pytest.FixtureRequest):
    pair = TwoRanks(request.module)
    yield pair
    pair.stop()
