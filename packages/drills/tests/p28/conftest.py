"""Two real Gloo ranks on loopback for P28's suite, started once per test module.

The ranks are forked from the test process, so they hold the candidate the module loaded;
a test sends a job (the name of a module-level function, called as `job(rank, *args)`) and
each rank's arguments, and gets each rank's return value back.

Each rank records the collectives it enters through `torch.distributed` (name, tensor
shapes and dtypes) and wraps every async work handle to see it waited on. After a job the
harness checks what the contract promises of every run: the ranks issued the same
collectives in the same order, with the same shapes and dtypes, and no rank returned with a
handle it never waited on. A rank that raises, dies or hangs is reported in one line naming
the rank, its collective and, where the ranks disagreed, the mismatch. Every rank has two
deadlines: Gloo's own (the process group's `timeout`) and the harness's, which kills both.
"""

from __future__ import annotations

import contextlib
import datetime
import faulthandler
import functools
import multiprocessing as mp
import os
import re
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from types import ModuleType
from typing import Any

import pytest
import torch
import torch.distributed as dist

WORLD = 2
GLOO_TIMEOUT_S = 2.0  # a collective whose peer never comes raises after this
DEADLINE_S = 8.0  # the harness kills both ranks after this, whatever they are doing
# Module-level collectives a rank records (the torch 2.13 names included).
COLLECTIVES = (
    "all_reduce", "all_gather_into_tensor", "reduce_scatter_tensor", "all_gather",
    "reduce_scatter", "all_gather_single", "reduce_scatter_single", "broadcast", "barrier",
    "all_to_all_single", "all_to_all", "reduce", "gather", "scatter", "send", "recv",
    "isend", "irecv", "_all_gather_base", "_reduce_scatter_base",
)  # fmt: skip


class RankError(AssertionError):
    """A rank raised, hung or died: the message names the rank and its last collective."""


@dataclass(frozen=True)
class Call:
    """One collective a rank entered: its name and the tensors it was given."""

    name: str
    tensors: str  # "float32 [4, 3], float32 [8, 3]"

    def __str__(self) -> str:
        return f"{self.name}({self.tensors})"


@dataclass
class Outcome:
    """One rank's end of a job: done, raised, died or hung, and what it entered."""

    kind: str
    detail: Any  # the value; (type name, message); the exit status; the deadline
    calls: list[Call] = field(default_factory=list)
    unwaited: list[str] = field(default_factory=list)  # handles returned but never waited


def _tensors(args: Sequence[Any]) -> str:
    found: list[str] = []
    for arg in args:
        items = arg if isinstance(arg, list | tuple) else [arg]
        for item in items:
            if isinstance(item, torch.Tensor):
                found.append(f"{str(item.dtype).removeprefix('torch.')} {list(item.shape)}")
    return ", ".join(found)


class _Waitable:
    """A work handle (or its future) that notes when it is waited on."""

    def __init__(self, inner: Any, on_wait: Callable[[], None]) -> None:
        self._inner, self._on_wait = inner, on_wait

    def wait(self, *args: Any, **kwargs: Any) -> Any:
        self._on_wait()
        return self._inner.wait(*args, **kwargs)

    def value(self) -> Any:  # a future's result: available only once it completed
        self._on_wait()
        return self._inner.value()

    def synchronize(self) -> Any:
        self._on_wait()
        return self._inner.synchronize()

    def is_completed(self) -> bool:
        done = bool(self._inner.is_completed())
        if done:  # a poll that saw it finish is a wait
            self._on_wait()
        return done

    def get_future(self) -> _Waitable:
        return _Waitable(self._inner.get_future(), self._on_wait)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class _Recorder:
    """A rank's record of one job: the collectives entered, the handles not yet waited."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.calls: list[Call] = []
        self.pending: dict[int, str] = {}

    def reset(self) -> None:
        self.calls, self.pending = [], {}

    def wrap(self, name: str, original: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(original)
        def call(*args: Any, **kwargs: Any) -> Any:
            entered = Call(name, _tensors([*args, *kwargs.values()]))
            self.calls.append(entered)
            self.conn.send(("enter", (entered.name, entered.tensors)))  # plain data
            work = original(*args, **kwargs)
            if work is None:
                return None
            label = f"{name} (collective #{len(self.calls)})"
            key = len(self.calls)
            self.pending[key] = label
            return _Waitable(work, lambda: self.pending.pop(key, None))

        return call

    def install(self) -> None:
        """Wrap the collectives in torch.distributed and wherever a module imported them."""
        originals = {name: getattr(dist, name) for name in COLLECTIVES if hasattr(dist, name)}
        wrapped = {name: self.wrap(name, fn) for name, fn in originals.items()}
        by_identity = {id(fn): wrapped[name] for name, fn in originals.items()}
        for name, fn in wrapped.items():
            setattr(dist, name, fn)
        for module in list(sys.modules.values()):  # `from torch.distributed import all_reduce`
            if module is None or getattr(module, "__name__", "torch").startswith("torch"):
                continue
            with contextlib.suppress(Exception):
                for key, value in list(vars(module).items()):
                    if callable(value) and id(value) in by_identity:
                        setattr(module, key, by_identity[id(value)])


def _quiet_stderr(path: str) -> None:
    """A dying rank's C++ abort text goes to a file the harness reads, not the test log."""
    faulthandler.disable()
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    os.dup2(descriptor, 2)
    os.close(descriptor)


def _serve(rank: int, port: int, conn: Connection, module: ModuleType, log: str) -> None:
    """One rank: join the group, then run jobs until told to stop."""
    _quiet_stderr(log)
    recorder = _Recorder(conn)
    recorder.install()
    store = dist.TCPStore("127.0.0.1", port, WORLD, False, timeout=datetime.timedelta(seconds=5))
    dist.init_process_group(
        "gloo", store=store, rank=rank, world_size=WORLD,
        timeout=datetime.timedelta(seconds=GLOO_TIMEOUT_S),
    )  # fmt: skip
    while (message := conn.recv()) is not None:
        job, args = message
        recorder.reset()
        try:
            kind, detail = "done", getattr(module, job)(rank, *args)
        except BaseException as error:  # every failure goes back to the test
            text = re.sub(r"\[[^\]]*\.cc:\d+\] ", "", str(error))  # gloo's source path
            kind, detail = "raised", (type(error).__name__, _one_line(text))
        calls = [(call.name, call.tensors) for call in recorder.calls]
        conn.send(("end", (kind, detail, calls, sorted(recorder.pending.values()))))
    dist.destroy_process_group()


def _one_line(text: str, limit: int = 200) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


class TwoRanks:
    """A pair of forked Gloo ranks; restarted after any job that could have broken it."""

    def __init__(self, module: ModuleType) -> None:
        self.module = module
        self.processes: list[Any] = []
        self.pipes: list[Connection] = []
        self.logs: list[str] = []
        self.store: Any = None

    def start(self) -> None:
        ctx = mp.get_context("fork")
        # The parent hosts the rendezvous on a port the OS picked: no port race.
        self.store = dist.TCPStore("127.0.0.1", 0, WORLD + 1, True, wait_for_workers=False)
        for rank in range(WORLD):
            parent, child = ctx.Pipe()
            handle, log = tempfile.mkstemp(prefix=f"p28_rank{rank}_", suffix=".log")
            os.close(handle)
            process = ctx.Process(
                target=_serve,
                args=(rank, self.store.port, child, self.module, log),
                daemon=True,
            )
            process.start()
            child.close()
            self.processes.append(process)
            self.pipes.append(parent)
            self.logs.append(log)

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
        for log in self.logs:
            with contextlib.suppress(OSError):
                os.unlink(log)
        self.processes, self.pipes, self.logs, self.store = [], [], [], None

    def run(self, job: str, per_rank_args: Sequence[tuple[Any, ...]]) -> list[Any]:
        """Each rank's return value, once every check of the run passed.

        AssertionError when the ranks' collectives differ (order, shape or dtype) or a rank
        returned with a handle it never waited on; RankError when a rank raised, died or hung.
        """
        outcomes = self.outcomes(job, per_rank_args)
        broken = contract_breaks(outcomes)
        failed = [describe(rank, o) for rank, o in enumerate(outcomes) if o.kind != "done"]
        if broken:
            raise AssertionError("; ".join(broken + failed))
        if failed:
            raise RankError("; ".join(failed))
        return [outcome.detail for outcome in outcomes]

    def outcomes(self, job: str, per_rank_args: Sequence[tuple[Any, ...]]) -> list[Outcome]:
        """Per rank: its Outcome, the collectives it entered and the handles it left."""
        if not self.processes:
            self.start()
        for pipe, args in zip(self.pipes, per_rank_args, strict=True):
            pipe.send((job, tuple(args)))
        entered: list[list[Call]] = [[] for _ in range(WORLD)]
        outcomes: list[Outcome | None] = [None] * WORLD
        deadline = time.monotonic() + DEADLINE_S
        while None in outcomes and (left := deadline - time.monotonic()) > 0:
            pending = [self.pipes[r] for r in range(WORLD) if outcomes[r] is None]
            for pipe in wait(pending, timeout=left):
                rank = self.pipes.index(pipe)  # type: ignore[arg-type]
                try:
                    kind, payload = pipe.recv()
                except EOFError:
                    self.processes[rank].join(timeout=1)
                    status = self.processes[rank].exitcode
                    reason = self._last_words(rank)
                    outcomes[rank] = Outcome("died", (status, reason), entered[rank])
                    continue
                if kind == "enter":
                    entered[rank].append(Call(*payload))
                else:
                    end, detail, calls, unwaited = payload
                    outcomes[rank] = Outcome(end, detail, [Call(*c) for c in calls], unwaited)
        final = [
            o if o is not None else Outcome("hung", DEADLINE_S, entered[rank])
            for rank, o in enumerate(outcomes)
        ]
        # A pair is reusable only when every rank finished in step, or all refused first.
        in_step = all(o.kind == "done" for o in final) and not contract_breaks(final)
        refused = all(o.kind == "raised" and not o.calls for o in final)
        if not (in_step or refused):
            self.stop(kill=True)
        return final

    @staticmethod
    def breaks(outcomes: Sequence[Outcome]) -> list[str]:
        """`contract_breaks`, for the tests (a conftest is not importable under importlib)."""
        return contract_breaks(outcomes)

    def _last_words(self, rank: int) -> str:
        """The abort reason a dead rank wrote (gloo's `what():` line), if any."""
        with contextlib.suppress(OSError):
            with open(self.logs[rank], encoding="utf-8", errors="replace") as log:
                lines = [line.strip() for line in log if line.strip()]
            reasons = [line for line in lines if line.startswith("what():")]
            if reasons or lines:
                text = re.sub(r"\[enforce fail at [^\]]*\] ", "", (reasons or lines)[-1])
                return _one_line(text.removeprefix("what():").strip(), 160)
        return ""


def contract_breaks(outcomes: Sequence[Outcome]) -> list[str]:
    """What the run broke of the rules every run keeps: the ranks' collectives in the same
    order with the same shapes and dtypes; every async handle waited on before returning."""
    broken: list[str] = []
    first = outcomes[0].calls
    for rank, outcome in enumerate(outcomes[1:], start=1):
        for index in range(max(len(first), len(outcome.calls))):
            mine = outcome.calls[index] if index < len(outcome.calls) else None
            theirs = first[index] if index < len(first) else None
            if mine == theirs:
                continue
            if mine is None or theirs is None or mine.name != theirs.name:
                broken.append(
                    f"collective order differs at collective #{index + 1}: rank {rank} issued "
                    f"{mine.name if mine else 'nothing'} where rank 0 issued "
                    f"{theirs.name if theirs else 'nothing'} (rank 0: "
                    f"{_names(first)}; rank {rank}: {_names(outcome.calls)})"
                )
            else:
                broken.append(
                    f"ranks disagree in {mine.name} (collective #{index + 1}): rank 0 passed "
                    f"{theirs.tensors}, rank {rank} passed {mine.tensors}"
                )
            break
    for rank, outcome in enumerate(outcomes):
        if outcome.kind == "done" and outcome.unwaited:
            broken.append(
                f"rank {rank} returned before waiting on the async work of "
                + ", ".join(outcome.unwaited)
            )
    return broken


def _names(calls: Sequence[Call]) -> str:
    return ", ".join(call.name for call in calls) or "none"


def describe(rank: int, outcome: Outcome) -> str:
    calls = outcome.calls
    where = (
        f"in or after {calls[-1]} (collective #{len(calls)})" if calls else "before any collective"
    )
    if outcome.kind == "raised":
        return f"rank {rank} raised {outcome.detail[0]} {where}: {outcome.detail[1]}"
    if outcome.kind == "hung":
        return f"rank {rank} did not finish within {DEADLINE_S:.0f} s; it was {where}"
    status, reason = outcome.detail
    said = f": {reason}" if reason else ""
    return f"rank {rank} died (exit status {status}) {where}{said}"


@pytest.fixture(scope="module")
def ranks(request: pytest.FixtureRequest):
    pair = TwoRanks(request.module)
    yield pair
    pair.stop()
