"""A distributed suite's rank joins its process group where the candidate's code runs.

A suite such as P28's forks one process per rank and runs its jobs there. In-process
(practice, an unjudged run) the rank's own process holds the candidate, joins the group
and records the collectives it enters (`collectives`). Under the judge the rank is a fork
of the judge and never runs candidate code: its candidate calls go to a worker of its
own (a fork of the worker its parent loaded), and that worker joins the group and keeps
the record, so what the record says (the order of the collectives, the handles left
unwaited) is worker-reported. A job's own `torch.distributed` calls go to the same place
(`torch_beside`): a group it makes is the worker's, and the candidate can be handed it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from gptlab_worker import collectives

from gptlab_testkit.judge import advisory, client
from gptlab_testkit.judge.worker_facts import WORKER_REPORTED

Calls = list[tuple[str, str]]  # (collective, its tensors as text), in the order entered
MAX_CALLS = 10_000  # a record kept of one job (a worker's word: bounded)


class Rank:
    """One rank's record of its collectives, wherever they run."""

    reported = ""  # appended to a failure decided by the record

    def take(self) -> tuple[Calls, list[str]]:
        """The collectives entered and the handles left unwaited since the last take."""
        raise NotImplementedError


class _HereRank(Rank):
    def __init__(self, recorder: collectives.Recorder) -> None:
        self.recorder = recorder

    def take(self) -> tuple[Calls, list[str]]:
        return self.recorder.take()


class _Reported(str):
    """The record's " (worker-reported)" mark. A rank is a fork of the test process and sends
    the mark with each job's record; unpickled there, it notes that the test consulted the
    worker's record (`advisory`): the suite's harness needs no change for it."""

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return _record_arrived, (str(self),)


def _record_arrived(mark: str) -> str:
    advisory.consulted("collectives record")
    return mark


class _WorkerRank(Rank):
    reported = _Reported(WORKER_REPORTED)

    def __init__(self, worker: client.Worker, on_enter: Callable[[str, str], None] | None) -> None:
        self.worker, self.generation = worker, -1  # the worker's, once it joined
        self.on_enter = on_enter
        self.calls: Calls = []
        worker.on_entered = self.entered  # the worker says each one as it begins

    def entered(self, name: str, tensors: str) -> None:
        if len(self.calls) < MAX_CALLS:
            self.calls.append((name, tensors))
        if self.on_enter is not None:
            self.on_enter(name, tensors)

    def take(self) -> tuple[Calls, list[str]]:
        if self.worker.generation != self.generation or self.worker.process is None:
            raise client.WorkerGoneError("the rank's worker was ended: it left the group")
        reply = self.worker.request({"op": "unwaited"}, [])
        unwaited = self.worker.decode(reply["value"], reply.pop("_blobs"))
        if not isinstance(unwaited, list) or not all(isinstance(u, str) for u in unwaited):
            raise AssertionError(f"a malformed list of unwaited handles: {unwaited!r:.200}")
        calls, self.calls = self.calls, []
        return calls, unwaited


def join(
    candidate_module: Any, rank: int, world: int, port: int, timeout_s: float,
    deadline_s: float, on_enter: Callable[[str, str], None] | None = None,
) -> Rank:  # fmt: skip
    """Join rank `rank` of `world` (the rendezvous: a TCP store on loopback at `port`;
    Gloo's deadline: `timeout_s`) where `candidate_module` (what `candidate(...)` gave)
    runs. `on_enter` hears each collective as it is entered (under the judge, as the
    worker says it). Under the judge, a call that takes longer than `deadline_s` ends the
    rank's worker (`client.WorkerTimedOutError`)."""
    joined: Rank
    if isinstance(candidate_module, client.RemoteModule):
        worker = candidate_module._worker
        worker.timeout_s = min(worker.timeout_s, deadline_s) if worker.timeout_s > 0 else deadline_s
        joined = _WorkerRank(worker, on_enter)
        worker.request(
            {"op": "join", "rank": rank, "world": world, "port": port, "timeout_s": timeout_s},
            [],
        )
        joined.generation = worker.generation  # a later one has left the group
    else:
        joined = _HereRank(collectives.join(rank, world, port, timeout_s, on_enter))
    joined.take()  # the first job's record starts here, whatever joining entered
    return joined


def torch_beside(candidate_module: Any, name: str) -> Any:
    """The torch module `name` as the candidate's code sees it: torch's own in-process,
    the worker's (by proxy: `client.WorkerTorch`) under the judge."""
    if name.partition(".")[0] != "torch":
        raise ValueError(f"name must be a module of torch's, got {name!r}")
    if isinstance(candidate_module, client.RemoteModule):
        advisory.consulted("the worker's torch")  # what it answers is the worker's word
        return client.WorkerTorch(candidate_module._worker, name)
    return importlib.import_module(name)
