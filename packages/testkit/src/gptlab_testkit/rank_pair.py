"""Two real Gloo ranks on loopback for a distributed suite (P28's), started once per module.

The `two_ranks` fixture (the testkit's pytest plugin) forks the ranks from the test
process; a test sends a job (the name of a function of its own module, called as
`job(rank, *args)`) and each rank's arguments, and gets each rank's return value back.
Where the candidate runs, each rank joins the group and records the collectives it enters
through `torch.distributed` (name, tensor shapes and dtypes) and wraps every async work
handle to see it waited on: in-process that is the rank itself, which holds the candidate
the module loaded; under the judge the rank never runs candidate code, and the process
that runs it joins the group and keeps the record (its word: a verdict resting on it is
marked "(worker-reported)" and not scored).

After a job the harness checks what every run must keep: the ranks issued the same
collectives in the same order, with the same shapes and dtypes, and no rank returned with
a handle it never waited on. A rank that raises, dies or hangs is reported in one line
naming the rank, its collective and, where the ranks disagreed, the mismatch. Every rank
has two deadlines: Gloo's own (the process group's `timeout`) and the harness's, which
kills both (under the judge a call that outlasts it ends the candidate's process, and the
rank reports itself hung). A job's own `torch.distributed` calls go where the candidate
runs: `torch_beside(candidate_module, "torch.distributed")`.
"""

from __future__ import annotations

import contextlib
import faulthandler
import multiprocessing as mp
import os
import re
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from types import ModuleType
from typing import Any

import torch.distributed as dist

from gptlab_testkit.judge import ranks as rank_group
from gptlab_testkit.judge.client import WorkerGoneError, WorkerTimedOutError
from gptlab_testkit.judge.ranks import torch_beside

WORLD = 2
GLOO_TIMEOUT_S = 2.0  # a collective whose peer never comes raises after this
DEADLINE_S = 8.0  # the harness kills both ranks after this, whatever they are doing
WORKER_DEADLINE_S = DEADLINE_S - 1.5  # under the judge: a rank's call ends its worker first


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
    detail: Any  # the value; (type name, message); (exit status, reason); the deadline
    calls: list[Call] = field(default_factory=list)
    unwaited: list[str] = field(default_factory=list)  # handles returned but never waited
    reported: str = ""  # " (worker-reported)" when the record is the candidate's worker's


def _quiet_stderr(path: str) -> None:
    """A dying rank's C++ abort text goes to a file the harness reads, not the test log."""
    faulthandler.disable()
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    os.dup2(descriptor, 2)
    os.close(descriptor)


def _serve(
    rank: int, port: int, conn: Connection, jobs: ModuleType, candidate: Any, log: str
) -> None:
    """One rank: join the group where the candidate runs, then run jobs until told to stop."""
    _quiet_stderr(log)

    def entered(name: str, tensors: str) -> None:
        conn.send(("enter", (name, tensors)))  # plain data

    here = rank_group.join(candidate, rank, WORLD, port, GLOO_TIMEOUT_S, WORKER_DEADLINE_S, entered)
    while (message := conn.recv()) is not None:
        job, args = message
        try:
            kind, detail = _run(getattr(jobs, job), rank, args)
            calls, unwaited = here.take()
        except WorkerGoneError as error:  # its worker died or hung: it left the group
            hung = isinstance(error, WorkerTimedOutError)
            detail = WORKER_DEADLINE_S if hung else (None, _one_line(str(error)))
            conn.send(("end", ("hung" if hung else "died", detail, None, [], here.reported)))
            return
        conn.send(("end", (kind, detail, calls, unwaited, here.reported)))
    with contextlib.suppress(Exception):  # in-process; under the judge it holds no group
        dist.destroy_process_group()


def _run(job: Any, rank: int, args: Sequence[Any]) -> tuple[str, Any]:
    """("done", the job's value) or ("raised", (type name, message)); a rank whose worker
    is gone (`WorkerGoneError`) is not a job's failure: it goes on up."""
    try:
        return "done", job(rank, *args)
    except WorkerGoneError:
        raise
    except BaseException as error:  # every failure goes back to the test
        text = re.sub(r"\[[^\]]*\.cc:\d+\] ", "", str(error))  # gloo's source path
        return "raised", (type(error).__name__, _one_line(text))


def _one_line(text: str, limit: int = 200) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


class TwoRanks:
    """A pair of forked Gloo ranks; restarted after any job that could have broken it."""

    def __init__(self, jobs: ModuleType, candidate: Any) -> None:
        self.jobs = jobs  # the module whose functions the ranks run
        self.candidate = candidate  # what `candidate(...)` gave: where the ranks join
        self.processes: list[Any] = []
        self.pipes: list[Connection] = []
        self.logs: list[str] = []
        self.store: Any = None

    def start(self) -> None:
        ctx = mp.get_context("fork")
        # The parent hosts the rendezvous on a port the OS picked: no port race.
        self.store = dist.TCPStore(  # type: ignore[attr-defined]
            "127.0.0.1", 0, WORLD + 1, True, wait_for_workers=False
        )
        for rank in range(WORLD):
            parent, child = ctx.Pipe()
            handle, log = tempfile.mkstemp(prefix=f"p28_rank{rank}_", suffix=".log")
            os.close(handle)
            process = ctx.Process(
                target=_serve,
                args=(rank, self.store.port, child, self.jobs, self.candidate, log),
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
            for ready in wait(pending, timeout=left):
                rank = next(r for r, pipe in enumerate(self.pipes) if pipe is ready)
                pipe = self.pipes[rank]
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
                    end, detail, calls, unwaited, reported = payload
                    known = entered[rank] if calls is None else [Call(*c) for c in calls]
                    outcomes[rank] = Outcome(end, detail, known, unwaited, reported)
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
        """`contract_breaks` (what the run broke), for a test holding only the pair."""
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
        reported = outcomes[0].reported or outcome.reported
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
                    f"{_names(first)}; rank {rank}: {_names(outcome.calls)}){reported}"
                )
            else:
                broken.append(
                    f"ranks disagree in {mine.name} (collective #{index + 1}): rank 0 passed "
                    f"{theirs.tensors}, rank {rank} passed {mine.tensors}{reported}"
                )
            break
    for rank, outcome in enumerate(outcomes):
        if outcome.kind == "done" and outcome.unwaited:
            broken.append(
                f"rank {rank} returned before waiting on the async work of "
                + ", ".join(outcome.unwaited)
                + outcome.reported
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
        return f"rank {rank} did not finish within {outcome.detail:g} s; it was {where}"
    status, reason = outcome.detail
    said = f": {reason}" if reason else ""
    status_text = "" if status is None else f" (exit status {status})"
    return f"rank {rank} died{status_text} {where}{said}"


__all__ = ["Outcome", "RankError", "TwoRanks", "contract_breaks", "describe", "torch_beside"]
