"""Run pytest suites in clean processes and read their routed results back.

`run_pytest` starts a new interpreter. `ForkedRun` forks one from this process after
`warm_up()` has imported torch, pytest, the plugin and the references once: the run
imports only its candidates and its test modules (into a process nobody else uses),
and its fork pool forks the test processes from there (see `isolation.ForkPool`), so
a grading run pays for one torch import however many suites, submissions or
known-bad candidates it grades. `side_by_side` keeps N such runs going at once.
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import os
import secrets
import signal
import subprocess
import sys
import tempfile
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gptlab_testkit.candidates import (
    MECHANISM_VARIABLES,
    VARIABLES,
    is_reference,
    select_test_files,
)
from gptlab_testkit.judge import reaper
from gptlab_testkit.judge.defaults import HOLD_FD_VARIABLE
from gptlab_testkit.loading.cannot_grade import CAUSE_FILE_VARIABLE, recorded_cause
from gptlab_testkit.running.results import ReportNotAuthenticError, TestResult, read_report

RUNTIME_PACKAGES = tuple(VARIABLES[name].package for name in MECHANISM_VARIABLES)


def suite_paths(root: Path, packages: Sequence[str] = RUNTIME_PACKAGES) -> list[str]:
    """Test folders of the given packages, plus integration_tests, under the repo root."""
    paths = [root / "packages" / name / "tests" for name in packages]
    paths.append(root / "integration_tests")
    return [str(path) for path in paths if path.is_dir()]


def drill_suite_paths(root: Path, variables: Sequence[str]) -> list[str]:
    """The suite folders of the drills among these variables (packages/drills/tests/<id>)."""
    suites = [root / VARIABLES[name].suite for name in variables if VARIABLES[name].is_drill]
    return [str(path) for path in suites if path.is_dir()]


def selected_files(root: Path, swapped: set[str]) -> list[str]:
    """The test files that can see these swapped variables: those of the mechanisms'
    suites and the integration slice that name one, and a swapped drill's own suite."""
    paths = suite_paths(root) + drill_suite_paths(root, sorted(swapped))
    return select_test_files(paths, swapped)


def grading_args(timeout: float, memory_limit: int, workers: int) -> list[str]:
    """pytest options that let a run survive its candidate (grade, the ladder, practice)."""
    return [
        f"--gptlab-workers={workers}",  # forked after collection (isolation.ForkPool)
        f"--timeout={timeout:g}",
        "--timeout-method=signal",
        f"--gptlab-memory-limit={memory_limit}",
    ]


@dataclass
class SuiteRun:
    returncode: int
    results: list[TestResult]
    output: str
    problem: str = ""  # why the run gave no verdict: stuck or died importing, ran too long
    seconds: float = 0.0  # wall time
    not_rerun: tuple[str, ...] = ()  # packages selection left to the references' verdict
    # The run earns nothing (`problem` says why): its judge or keeper died by a signal or
    # was stopped, its report did not come from its judge, or it ran past its deadline.
    forfeit: bool = False
    # No verdict: a candidate could not be imported (`problem` says why); `results` are the
    # tests listed for it, each failed as not run (grading.JudgedRun), so every count is
    # 0 of the expected tests.
    not_graded: bool = False


def run_pytest(
    paths: Sequence[str],
    env_overrides: Mapping[str, str],
    extra_args: Sequence[str] = (),
    *,
    capture: bool = True,
    cwd: Path | None = None,
    scratch_cwd: bool = False,
) -> SuiteRun:
    """pytest in a fresh interpreter, so each candidate is imported into a clean process.

    `scratch_cwd` runs it from an empty temporary folder, so whatever the candidate
    writes to relative paths lands there and not in the checkout.
    """
    env = {**os.environ, **env_overrides}
    with (
        tempfile.TemporaryDirectory(prefix="gptlab-") as scratch,
        tempfile.TemporaryDirectory(prefix="gptlab-cwd-") as candidate_cwd,
    ):
        report = Path(scratch) / "report.json"
        if scratch_cwd:
            cwd = Path(candidate_cwd)
        command = [
            sys.executable,
            "-m",
            "pytest",
            *paths,
            "-p",
            "no:cacheprovider",
            "--gptlab-report",
            str(report),
            *extra_args,
        ]
        completed = subprocess.run(
            command,
            env=env,
            cwd=cwd,
            text=True,
            stdout=subprocess.PIPE if capture else None,
            stderr=subprocess.STDOUT if capture else None,
            check=False,
        )
        results = read_report(report)[1] if report.exists() else []
    return SuiteRun(completed.returncode, results, completed.stdout or "")


# Imported once, before any run is forked. torch.distributed.tensor is what the first
# torch.testing.assert_close imports lazily (~1 s). No torch op runs before forking.
_PRELOAD = (
    "torch",
    "torch.distributed.tensor",
    "pytest",
    "_pytest.pytester",
    "hypothesis",
    "pytest_timeout",
    "xdist.plugin",
    "gptlab_testkit.running.plugin",
    "gptlab_testkit.models",
    "gptlab_testkit.boundary",
)
_REFERENCE_EXTRAS = ("cache_aware_lm.modern",)  # what cache_aware_modules() imports
_warm = False


def warm_up() -> None:
    """Import torch, the test tools and every installed reference, once per process."""
    global _warm
    if _warm:
        return
    # One intra-op thread per test process: runs are side by side already, tiny models
    # only lose to thread contention, and a forked child must not inherit a thread pool.
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    # What a lane's worker gets (Triton's interpreter) holds where its references run in
    # process too, set before any preload can import that runtime (dynamo imports triton).
    for variable in VARIABLES.values():
        for key, value in variable.worker_environment:
            os.environ.setdefault(key, value)
    # Not the references that need a third-party runtime (triton for the Triton lane): a
    # second of import for every grade, and its bindings' leak report on every exit.
    references = [v.default_module for v in VARIABLES.values() if not v.worker_distributions]
    references += list(_REFERENCE_EXTRAS)
    for name in (*_PRELOAD, *references):
        with contextlib.suppress(ImportError):  # a venv without that package
            importlib.import_module(name)
    preload([name for name in VARIABLES if not is_reference(name)])
    # Also when torch came in before the variable was set (this package imports it):
    # a run that used a thread pool of 2+ would fork test processes that can hang in
    # their first parallel op (OpenMP is not fork-safe).
    import torch

    torch.set_num_threads(1)
    _scan_hypothesis_constants()
    # Every object made so far outlives the runs: a child's garbage collections (pytest
    # runs several as it ends) then skip the whole torch heap, and no page is copied
    # just to be counted.
    gc.freeze()
    _warm = True


def preload(variables: Sequence[str]) -> None:
    """Import what these variables' suites need once, before any run is forked."""
    for variable in variables:
        for name in VARIABLES[variable].preload:
            with contextlib.suppress(ImportError):
                importlib.import_module(name)


def _scan_hypothesis_constants() -> None:
    """Hypothesis reads the constants of every newly imported local module at collection
    (~1.5 s for torch's); read them once here, so a forked run reads only its own.

    The scan writes hypothesis's storage, so it runs before hypothesis's pytest plugin is
    imported: that import marks the process as initialising until a session starts, and a
    scan after it is the side effect HypothesisSideeffectWarning reports. The scan is done
    on purpose before any plugin: the plugin's import then starts its initialisation afresh.
    """
    with contextlib.suppress(ImportError, AttributeError):
        from hypothesis.configuration import notice_initialization_restarted
        from hypothesis.internal.conjecture.providers import _get_local_constants

        _get_local_constants()
        notice_initialization_restarted(warn=False)
    with contextlib.suppress(ImportError):
        importlib.import_module("_hypothesis_pytestplugin")  # preloaded, like _PRELOAD


class _StopRunError(Exception):
    """The keeper was told to stop its run (SIGTERM from the grading process)."""


def _exit_code(status: int) -> int:
    return os.waitstatus_to_exitcode(status)


# The keeper's exit status when the judging process was stopped (SIGSTOP, SIGTSTP, ...):
# this plus the signal's number (pytest's own codes are 0-5; no candidate code runs there).
STOPPED_EXIT_BASE = 128


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


_NOT_AUTHENTIC = (
    "the run's report did not come from the judging process (it failed authentication): "
    "nothing earned"
)


def _forfeit_reason(returncode: int) -> str:
    """Why a run whose keeper exited so earns nothing ("" when it exited on its own)."""
    if returncode < 0:
        return (
            f"the judging process was killed by signal {-returncode} "
            f"({_signal_name(-returncode)}): nothing earned"
        )
    if returncode > STOPPED_EXIT_BASE:
        stop = returncode - STOPPED_EXIT_BASE
        return (
            f"the judging process was stopped by signal {stop} ({_signal_name(stop)}) "
            "and ended: nothing earned"
        )
    return ""


class ForkedRun:
    """pytest in a process forked from this (warm) one, in a process group of its own.

    `import_limit` bounds collection, where candidates are imported (the per-test limit
    does not cover it); `limit` bounds the whole run (`limit_from_now` shortens it).
    Either one kills the group.

    The run's report is authenticated: a key made here travels to the judging process in
    its pytest arguments (in memory: the run is forked, never exec'd, so no command line
    or environment shows it; a worker is spawned with an environment of its own and no
    inherited descriptor) and the report is read only if its HMAC holds. A report that
    fails, a judging process or keeper that died by a signal or was stopped, earns
    nothing (`SuiteRun.forfeit`).
    """

    def __init__(
        self,
        paths: Sequence[str],
        env: Mapping[str, str],
        args: Sequence[str],
        *,
        log: Path | None = None,
        capture: bool = True,
        cwd: Path | None = None,
        clear_variables: bool = False,
        import_limit: float | None = None,
        limit: float | None = None,
        describe: str = "",
        hold: bool = False,
    ) -> None:
        self._scratch = tempfile.TemporaryDirectory(prefix="gptlab-run-")
        scratch = Path(self._scratch.name)
        self.report = scratch / "report.json"
        self._key = secrets.token_bytes(32)  # the report's HMAC key (see the class docstring)
        self.log = log.resolve() if log else (scratch / "output.log" if capture else None)
        self.describe = describe or ", ".join(f"{k}={v}" for k, v in env.items()) or "the tests"
        self.started = time.monotonic()
        self.import_deadline = self.started + import_limit if import_limit else None
        self.deadline = self.started + limit if limit else None
        self.limit, self.import_limit = limit, import_limit
        self.collected = False
        self.result: SuiteRun | None = None
        # The run starts in a scratch folder: relative paths are resolved here, first.
        paths = [str(Path(p).resolve()) if Path(p).exists() else p for p in paths]
        self.paths = paths  # absolute where they exist: a test's nodeid resolves against them
        self.cause_file = scratch / "cannot-grade.txt"  # a candidate error's line, if any
        env = {**env, CAUSE_FILE_VARIABLE: str(self.cause_file)}
        argv = [*paths, "-p", "no:cacheprovider", "--gptlab-report", str(self.report)]
        argv += ["--gptlab-report-key", self._key.hex()]
        # Preloaded plugins (xdist, pytest-timeout, hypothesis) cannot be rewritten; fine.
        argv += ["-W", "ignore::pytest.PytestAssertRewriteWarning", *args]
        read_end, write_end = os.pipe()
        # `hold`: the run starts now but waits, before it imports a conftest or a candidate,
        # until `release()` (grade lists the expected tests meanwhile: HOLD_FD_VARIABLE).
        held, self._hold = os.pipe() if hold else (-1, -1)
        if hold:
            env = {**env, HOLD_FD_VARIABLE: str(held)}
        sys.stdout.flush()
        sys.stderr.flush()
        self.pid = os.fork()
        if self.pid == 0:  # the keeper: it owns the run's whole process tree (see reaper)
            os.close(read_end)
            if hold:
                os.close(self._hold)
            self._keeper(argv, env, write_end, (cwd or scratch / "cwd").resolve(), clear_variables)
        reaper.LIVE_KEEPERS.add(self.pid)
        os.close(write_end)
        if hold:
            os.close(held)
        os.set_blocking(read_end, False)
        self._collected_fd = read_end

    def _keeper(
        self, argv: list[str], env: Mapping[str, str], fd: int, cwd: Path, clear: bool
    ) -> None:
        """Fork the run, wait for it, then end every process it left (nothing outlives it).

        It exits as the run did (its code, or the signal that ended it), so the grading
        process reads the run's status from the keeper. SIGTERM: stop the run now.
        """
        status, stopped = 3 << 8, 0
        try:
            os.setpgid(0, 0)
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            reaper.become_subreaper()
            run = os.fork()
            if run == 0:
                self._child(argv, env, fd, cwd, clear)
            os.close(fd)

            def stop(_signum: int, _frame: object) -> None:
                raise _StopRunError

            signal.signal(signal.SIGTERM, stop)
            try:
                status, stopped = _wait_unstopped(run)
            except _StopRunError:
                status = signal.SIGKILL  # reads as a run that was killed (exit status -9)
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            reaper.end_tree()
        except BaseException:  # nothing may unwind into the parent's code
            with contextlib.suppress(BaseException):
                reaper.end_tree()
        if stopped:
            os._exit(STOPPED_EXIT_BASE + stopped)
        if os.WIFSIGNALED(status):  # die of the same signal (SIGKILL has no handler)
            with contextlib.suppress(BaseException):
                if os.WTERMSIG(status) != signal.SIGKILL:
                    signal.signal(os.WTERMSIG(status), signal.SIG_DFL)
                os.kill(os.getpid(), os.WTERMSIG(status))
        os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 3)

    def _child(
        self, argv: list[str], env: Mapping[str, str], fd: int, cwd: Path, clear: bool
    ) -> None:
        code = 3
        try:
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            if clear:  # a caller's *_MODULE variables must not reach this run
                for name in VARIABLES:
                    os.environ.pop(name, None)
            os.environ.update(env)
            os.environ["GPTLAB_COLLECTED_FD"] = str(fd)
            cwd.mkdir(parents=True, exist_ok=True)
            os.chdir(cwd)
            if self.log is not None:
                out = os.open(self.log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
                os.dup2(out, 1)
                os.dup2(out, 2)
                # Whoever forked us may have replaced sys.stdout (an outer pytest's capture).
                sys.stdout = open(1, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
                sys.stderr = open(2, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
            # The run imports this package afresh: pytest rewrites the asserts of its
            # plugin's package (the suites' assertion helpers), which it can only do on
            # import, and every test-side record (loaded candidates, stop list) starts
            # empty. torch and the references stay imported.
            for name in [n for n in sys.modules if n.split(".")[0] == "gptlab_testkit"]:
                del sys.modules[name]
            import pytest

            code = int(pytest.main(argv))
        except BaseException:  # nothing may unwind into the parent's code
            import traceback

            traceback.print_exc()
        finally:
            with contextlib.suppress(Exception):
                sys.stdout.flush()
                sys.stderr.flush()
            os._exit(code)

    def release(self) -> None:
        """A held run goes on (its expected tests are listed)."""
        if self._hold >= 0:
            with contextlib.suppress(OSError):  # the run may have ended already
                os.write(self._hold, b"go")
            os.close(self._hold)
            self._hold = -1

    def _read_collected(self) -> None:
        if self.collected:
            return
        with contextlib.suppress(BlockingIOError, OSError):
            if os.read(self._collected_fd, 64):
                self.collected = True

    def poll(self) -> SuiteRun | None:
        """The run's result once it has ended (or was ended for running too long)."""
        if self.result is not None:
            return self.result
        self._read_collected()
        pid, status = os.waitpid(self.pid, os.WNOHANG | os.WUNTRACED)
        if pid and os.WIFSTOPPED(status):  # only the run's own code can have stopped it
            stop = os.WSTOPSIG(status)
            self.kill()  # the keeper's group, the stopped keeper too (SIGKILL ends it)
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
            _, status = os.waitpid(self.pid, 0)
            why = f"the run's keeper was stopped by signal {stop} ({_signal_name(stop)})"
            return self._finish(_exit_code(status), f"{why} and ended: nothing earned", True)
        if pid:
            self._read_collected()
            return self._finish(_exit_code(status), "")
        now = time.monotonic()
        if not self.collected and self.import_deadline and now > self.import_deadline:
            why = f"importing {self.describe} did not finish within {self.import_limit:g} s"
            return self._kill(why)
        if self.deadline and now > self.deadline:
            why = f"ran past its time limit of {self.limit:g} s and was stopped"
            return self._kill(why, forfeit=True)  # what it did not report counts as failed
        return None

    def limit_from_now(self, seconds: float) -> None:
        """The whole run ends `seconds` from now at the latest (an earlier limit holds)."""
        deadline = time.monotonic() + seconds
        if self.deadline is None or deadline < self.deadline:
            self.deadline, self.limit = deadline, round(deadline - self.started, 1)

    def wait(self) -> SuiteRun:
        while (result := self.poll()) is None:
            time.sleep(0.05)
        return result

    def kill(self) -> None:
        """Stop the run: its group at once, then the keeper ends whatever left the group."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGKILL)  # the keeper's group: run, pool, children

    def _kill(self, why: str, forfeit: bool = False) -> SuiteRun:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(self.pid, signal.SIGTERM)  # the keeper stops the run and its strays
        deadline = time.monotonic() + 15.0
        while time.monotonic() < deadline:
            pid, status = os.waitpid(self.pid, os.WNOHANG | os.WUNTRACED)
            if pid and os.WIFSTOPPED(status):
                break  # a stopped keeper hears no SIGTERM: SIGKILL it now
            if pid:
                return self._finish(_exit_code(status), why, forfeit)
            time.sleep(0.02)
        self.kill()
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)
        _, status = os.waitpid(self.pid, 0)
        return self._finish(_exit_code(status), why, forfeit)

    def _finish(self, returncode: int, problem: str, forfeit: bool = False) -> SuiteRun:
        self.kill()  # workers left behind by a run that died
        reaper.LIVE_KEEPERS.discard(self.pid)
        reaper.sweep()  # orphans of a keeper the candidate killed: before any result
        os.close(self._collected_fd)
        results: list[TestResult] = []
        if not problem and _forfeit_reason(returncode):  # (a judge runs no candidate code)
            problem, forfeit = _forfeit_reason(returncode), True
            if not self.collected and not self.report.exists():  # (in-process: practice)
                problem = f"the process importing {self.describe} died (exit status {returncode})"
        if not forfeit and self.report.exists():
            try:
                results = read_report(self.report, key=self._key)[1]
            except ReportNotAuthenticError:
                problem, forfeit = _NOT_AUTHENTIC, True
            except (OSError, ValueError, KeyError, TypeError):
                pass
        elif not problem and not self.collected:
            problem = f"the process importing {self.describe} died (exit status {returncode})"
        elif not problem and not forfeit:
            problem = f"the grading process died (exit status {returncode})"
        cause = recorded_cause(self.cause_file)  # a candidate that could not be imported
        died = not problem or problem.startswith("the process importing")
        if cause and died and not results and not forfeit:
            problem = cause  # its own words, not "the process importing ... died"
        output = ""
        if self.log is not None and self.log.exists():
            output = self.log.read_text(encoding="utf-8", errors="replace")
        self.result = SuiteRun(
            returncode, results, output, problem, time.monotonic() - self.started, forfeit=forfeit
        )
        self._scratch.cleanup()
        return self.result


def _wait_unstopped(run: int) -> tuple[int, int]:
    """(wait status, stop signal or 0) of the run: a judging process that is stopped
    (only the run's own code can have stopped it) is killed, not waited for."""
    stopped = 0
    while True:
        _, status = os.waitpid(run, os.WUNTRACED)
        if not os.WIFSTOPPED(status):
            return status, stopped
        stopped = os.WSTOPSIG(status)
        os.kill(run, signal.SIGKILL)


def side_by_side(starts: Sequence[Callable[[], Any]], jobs: int) -> Iterator[tuple[int, Any]]:
    """Start tasks `jobs` at a time; yield (index, result) as each ends.

    A start returns a pending task (with `poll()` and `kill()`, like ForkedRun) or a
    result at once. Everything runs from this one thread, so forking is safe.
    """
    waiting = deque(enumerate(starts))
    running: dict[int, Any] = {}
    try:
        while waiting or running:
            while waiting and len(running) < max(1, jobs):
                index, start = waiting.popleft()
                task = start()
                if hasattr(task, "poll"):
                    running[index] = task
                else:
                    yield index, task
            for index, task in list(running.items()):
                result = task.poll()
                if result is not None:
                    del running[index]
                    yield index, result
            if running:
                time.sleep(0.05)
    finally:  # interrupted: no run may outlive its caller
        for task in running.values():
            task.kill()
            with contextlib.suppress(Exception):
                task.poll()
