"""Survive the candidate: time limits, crashes and memory during grading.

Grading runs tests in pytest-xdist workers (`-n N`): a candidate that ends its
process (os._exit, abort, segfault) takes one worker down, xdist reports the test
it was running as failed and starts a new worker. pytest-timeout (`--timeout`,
signal method) fails a test that runs too long. This module adds what those two
leave open, on the worker side and the controller side of the same run:

- a memory limit per test process (RLIMIT_AS), so unbounded allocation fails a test
  instead of taking the machine down;
- a watchdog that ends the worker when a test outlives its limit by a grace period
  (a hang inside C code, or a candidate that swallows pytest-timeout's exception);
- a stop list: once a test timed out, or three tests crashed their process, the
  candidate to blame (the innermost candidate frame of a timeout, else the swapped
  variables the test exercises) is stopped: every later test that
  exercises it fails at once ("not run: ...") in every suite, so a hanging or
  crashing candidate costs about one time limit, not one per test;
- a KeyboardInterrupt raised inside a test fails that test instead of the session.

Workers and controller share one scratch folder (passed to workers by xdist's
`workerinput`): the stop list and the watchdog's notes live there as small files.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import resource
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection, Pipe, wait
from pathlib import Path
from types import TracebackType

import pytest

from gptlab_testkit.candidates import is_reference, load_candidate
from gptlab_testkit.running.results import TestResult

CRASHES_BEFORE_STOP = 3
WATCHDOG_GRACE_S = 10.0
WATCHDOG_EXIT_CODE = 70


def set_memory_limit(limit_mib: int) -> None:
    """Cap this process's address space (a 0 limit leaves it alone)."""
    if limit_mib <= 0:
        return
    limit = limit_mib * 1024 * 1024
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


def _key(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()[:16]


class SharedState:
    """The files workers and the controller of one run agree on."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        for sub in ("stop", "crashes", "killed"):
            (folder / sub).mkdir(parents=True, exist_ok=True)

    # -- the stop list: a suspect (a candidate's variable) -> why its tests are not run
    def stop(self, suspect: str, why: str) -> None:
        path = self.folder / "stop" / suspect
        if not path.exists():
            path.write_text(why, encoding="utf-8")

    def stopped(self, suspects: Sequence[str]) -> str | None:
        for suspect in suspects:
            path = self.folder / "stop" / suspect
            if path.exists():
                return path.read_text(encoding="utf-8")
        return None

    # -- crashes counted per suspect (controller side)
    def count_crash(self, suspect: str, nodeid: str) -> int:
        folder = self.folder / "crashes" / suspect
        folder.mkdir(exist_ok=True)
        (folder / _key(nodeid)).touch()
        return len(list(folder.iterdir()))

    # -- the watchdog's note that it ended a worker because of a test
    def note_killed(self, nodeid: str, why: str) -> None:
        (self.folder / "killed" / _key(nodeid)).write_text(why, encoding="utf-8")

    def killed(self, nodeid: str) -> str | None:
        path = self.folder / "killed" / _key(nodeid)
        return path.read_text(encoding="utf-8") if path.exists() else None


class Watchdog:
    """Ends this process if one test runs past `limit_s` plus a grace period."""

    def __init__(self, state: SharedState, limit_s: float) -> None:
        self.state = state
        self.limit_s = limit_s
        self._timer: threading.Timer | None = None

    def arm(self, nodeid: str) -> None:
        self.disarm()
        if self.limit_s <= 0:
            return
        self._timer = threading.Timer(self.limit_s + WATCHDOG_GRACE_S, self._fire, (nodeid,))
        self._timer.daemon = True
        self._timer.start()

    def disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _fire(self, nodeid: str) -> None:
        why = f"timed out after {self.limit_s:g} s (the test process was ended)"
        self.state.note_killed(nodeid, why)
        os._exit(WATCHDOG_EXIT_CODE)


def timeout_seconds(config: pytest.Config) -> float:
    """pytest-timeout's per-test limit for this run (0 when none)."""
    try:
        value = config.getoption("timeout")
    except ValueError:  # pytest-timeout not installed
        return 0.0
    return float(value or 0)


def suspects_of(result: TestResult) -> list[str]:
    """Who to stop when this test hangs or crashes: the swapped candidates it exercises.

    A test that exercises no candidate stops nothing: its own failure says enough.
    """
    return [v for v in result.variables if not is_reference(v)]


def innermost_candidate(tb: TracebackType | None, variables: Sequence[str]) -> str | None:
    """The swapped variable whose file holds the innermost frame of a traceback."""
    files = {}
    for variable in variables:
        if not is_reference(variable):
            module_file = getattr(load_candidate(variable), "__file__", None)
            if module_file:
                files[str(Path(module_file).resolve())] = variable
    found = None
    while tb is not None:
        found = files.get(str(Path(tb.tb_frame.f_code.co_filename).resolve()), found)
        tb = tb.tb_next
    return found


def fail_if_stopped(state: SharedState, result: TestResult) -> None:
    why = state.stopped(result.variables)
    if why is not None:
        pytest.fail(f"not run: {why}", pytrace=False)


# -- the fork pool: test processes forked from the collected session
#
# pytest-xdist starts each worker as a fresh interpreter (execnet), which imports torch,
# the references and the candidate and collects every test again: about 20 s of CPU per
# worker on a 2-core machine, more than the tests a single candidate needs. xdist cannot
# fork. This pool forks its workers from the pytest process once collection is done, so
# they start with torch, the references, the candidate and the collected items already
# in memory. Each worker runs whole test modules (module-scoped fixtures stay warm) and
# sends its reports back as xdist does (pytest's report serialization hooks); the parent
# logs them, so routing, the scorecard, JUnit XML and the exit status are pytest's own.
# A worker that dies fails the test it was running and a new fork carries on with the
# rest of that module; the parent ends a worker whose test outlives its time limit.

IN_POOL_WORKER = False  # True inside a worker forked by ForkPool


@dataclass
class _Worker:
    pid: int
    conn: Connection
    unit: list[int]  # the item indices it was given, in order
    position: int = 0  # how many of them it has finished
    started: float | None = None  # when its current test started (monotonic)

    @property
    def current(self) -> int | None:
        return self.unit[self.position] if self.started is not None else None


class _Forwarder:
    """Inside a worker: what pytest would log, sent to the parent instead."""

    def __init__(self, config: pytest.Config, conn: Connection) -> None:
        self.config = config
        self.conn = conn

    def pytest_runtest_logstart(self, nodeid: str, location: tuple[str, int | None, str]) -> None:
        self.conn.send(("logstart", nodeid, location))

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        data = self.config.hook.pytest_report_to_serializable(config=self.config, report=report)
        self.conn.send(("report", data))

    def pytest_runtest_logfinish(self, nodeid: str, location: tuple[str, int | None, str]) -> None:
        self.conn.send(("logfinish", nodeid, location))


def module_units(items: Sequence[pytest.Item]) -> list[list[int]]:
    """Item indices grouped by test module, in collection order (one unit per module)."""
    units: list[list[int]] = []
    last: object = None
    for index, item in enumerate(items):
        module = getattr(item, "path", None)
        if not units or module != last:
            units.append([])
            last = module
        units[-1].append(index)
    return units


class ForkPool:
    """Run a collected session's items in `workers` forked processes; see above."""

    def __init__(
        self,
        session: pytest.Session,
        workers: int,
        *,
        memory_limit_mib: int,
        timeout_s: float,
        scratch: Path,
        on_crash: Callable[[str, str | None], str],
    ) -> None:
        self.session = session
        self.config = session.config
        self.items = list(session.items)
        self.workers = max(1, workers)
        self.memory_limit_mib = memory_limit_mib
        self.timeout_s = timeout_s
        self.scratch = scratch
        self.on_crash = on_crash  # (nodeid, watchdog reason or None) -> report text
        self.queue: deque[list[int]] = deque(module_units(self.items))
        self.running: dict[int, _Worker] = {}

    # -- parent side
    def run(self) -> None:
        while self.queue or self.running:
            while self.queue and len(self.running) < self.workers and not self._stopping():
                self._spawn(self.queue.popleft())
            if not self.running:
                break
            ready = wait([worker.conn for worker in self.running.values()], timeout=0.5)
            for conn in ready:
                worker = next(w for w in self.running.values() if w.conn is conn)
                self._serve(worker)
            self._enforce_time_limits()

    def _stopping(self) -> bool:
        return bool(self.session.shouldstop or self.session.shouldfail)

    def _spawn(self, unit: list[int]) -> None:
        parent_end, child_end = Pipe()
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # the worker
            parent_end.close()
            for other in self.running.values():
                other.conn.close()
            code = 0
            try:
                self._work(child_end, unit)
            except BaseException:  # nothing may unwind into the parent's pytest
                code = 1
            os._exit(code)
        child_end.close()
        self.running[pid] = _Worker(pid, parent_end, unit)

    def _serve(self, worker: _Worker) -> None:
        try:
            message = worker.conn.recv()
        except (EOFError, OSError):
            self._reap(worker)
            return
        kind = message[0]
        hook = self.config.hook
        if kind == "start":
            worker.started = time.monotonic()
        elif kind == "logstart":
            hook.pytest_runtest_logstart(nodeid=message[1], location=message[2])
        elif kind == "report":
            report = hook.pytest_report_from_serializable(config=self.config, data=message[1])
            hook.pytest_runtest_logreport(report=report)
        elif kind == "logfinish":
            hook.pytest_runtest_logfinish(nodeid=message[1], location=message[2])
        elif kind == "done":
            worker.started = None
            worker.position += 1
        elif kind == "bye":  # it stopped early (-x, --maxfail): the rest is not run
            worker.position = len(worker.unit)

    def _reap(self, worker: _Worker, why: str | None = None) -> None:
        """A worker that ended: a test it was running failed; the rest of its unit goes on."""
        os.waitpid(worker.pid, 0)
        worker.conn.close()
        del self.running[worker.pid]
        if worker.position >= len(worker.unit):
            return  # it finished its unit and left
        index = worker.unit[worker.position]
        item = self.items[index]
        self._report_crash(item, self.on_crash(item.nodeid, why))
        rest = worker.unit[worker.position + 1 :]
        if rest:
            self.queue.appendleft(rest)

    def _report_crash(self, item: pytest.Item, text: str) -> None:
        hook = self.config.hook
        hook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
        report = pytest.TestReport(
            nodeid=item.nodeid,
            location=item.location,
            keywords={name: 1 for name in item.keywords},
            outcome="failed",
            longrepr=text,
            when="call",
            sections=[],
            duration=0.0,
        )
        hook.pytest_runtest_logreport(report=report)
        hook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)

    def _enforce_time_limits(self) -> None:
        """The parent's watchdog: it works even when the test holds the GIL in C code."""
        if self.timeout_s <= 0:
            return
        now = time.monotonic()
        for worker in list(self.running.values()):
            if worker.started is not None and now - worker.started > (
                self.timeout_s + WATCHDOG_GRACE_S
            ):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(worker.pid, signal.SIGKILL)
                why = f"timed out after {self.timeout_s:g} s (the test process was ended)"
                self._reap(worker, why)

    def stop_all(self) -> None:
        for worker in list(self.running.values()):
            with contextlib.suppress(ProcessLookupError):
                os.kill(worker.pid, signal.SIGKILL)
            os.waitpid(worker.pid, 0)
        self.running.clear()

    # -- worker side
    def _work(self, conn: Connection, unit: list[int]) -> None:
        global IN_POOL_WORKER
        IN_POOL_WORKER = True
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
        set_memory_limit(self.memory_limit_mib)
        os.chdir(self.scratch)
        plugins = self.config.pluginmanager
        terminal = plugins.get_plugin("terminalreporter")
        if terminal is not None:  # the parent prints; pytest-timeout still needs a writer
            from _pytest.config import create_terminal_writer

            quiet = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115  # until _exit
            terminal._tw = create_terminal_writer(self.config, quiet)
        plugins.register(_Forwarder(self.config, conn), "gptlab-pool-forwarder")
        for position, index in enumerate(unit):
            item = self.items[index]
            following = unit[position + 1] if position + 1 < len(unit) else None
            nextitem = self.items[following] if following is not None else None
            conn.send(("start", index))
            self.config.hook.pytest_runtest_protocol(item=item, nextitem=nextitem)
            conn.send(("done", index))
            if self.session.shouldstop or self.session.shouldfail:
                break
        conn.send(("bye",))
        conn.close()
