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

import hashlib
import os
import resource
import threading
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType

import pytest

from .candidates import is_reference, load_candidate
from .results import TestResult

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
