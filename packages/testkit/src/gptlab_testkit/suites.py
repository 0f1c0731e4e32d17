"""Run pytest suites in fresh processes and read their routed results back.

`run_pytest` starts a new interpreter. `PytestPool` runs many suites side by side
in processes forked from a server that has already imported torch, pytest and the
plugin: each run still imports its candidate into a clean process, but skips the
~3 s of imports every fresh interpreter pays (the known-bad ladder runs ~60 suites).
"""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from .candidates import VARIABLE_BY_PACKAGE
from .results import TestResult, read_report

RUNTIME_PACKAGES = tuple(VARIABLE_BY_PACKAGE)


def suite_paths(root: Path, packages: Sequence[str] = RUNTIME_PACKAGES) -> list[str]:
    """Test folders of the given packages, plus integration_tests, under the repo root."""
    paths = [root / "packages" / name / "tests" for name in packages]
    paths.append(root / "integration_tests")
    return [str(path) for path in paths if path.is_dir()]


@dataclass
class SuiteRun:
    returncode: int
    results: list[TestResult]
    output: str


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


# Imported once by the fork server. torch.distributed.tensor is what the first
# torch.testing.assert_close imports lazily (~1 s); no torch op runs before forking.
_PRELOAD = ["torch", "torch.distributed.tensor", "pytest", "hypothesis", "gptlab_testkit.plugin"]


def _pytest_in_fresh_child(
    args: Sequence[str], env_overrides: Mapping[str, str], report: str
) -> tuple[int, str]:
    """Runs in a forked child that serves exactly this one task."""
    import pytest

    os.environ.update(env_overrides)
    with tempfile.TemporaryFile(mode="w+", encoding="utf-8") as log:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
        code = int(pytest.main([*args, "-p", "no:cacheprovider", "--gptlab-report", report]))
        sys.stdout.flush()
        sys.stderr.flush()
        log.seek(0)
        return code, log.read()


class PytestPool:
    """Side-by-side pytest runs, one fresh forked process per run."""

    def __init__(self, jobs: int) -> None:
        # One intra-op thread per run, fixed before the server imports torch: runs are
        # side by side already, and tiny models only lose to thread contention.
        os.environ.setdefault("OMP_NUM_THREADS", "1")
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(_PRELOAD)
        self._executor = ProcessPoolExecutor(
            max_workers=max(1, jobs), mp_context=context, max_tasks_per_child=1
        )
        self._scratch = tempfile.TemporaryDirectory(prefix="gptlab-pool-")
        self._count = 0

    def submit(
        self, paths: Sequence[str], env: Mapping[str, str], args: Sequence[str]
    ) -> Future[SuiteRun]:
        self._count += 1
        report = Path(self._scratch.name) / f"report-{self._count}.json"
        inner = self._executor.submit(
            _pytest_in_fresh_child, [*paths, *args], dict(env), str(report)
        )
        outer: Future[SuiteRun] = Future()

        def finish(done: Future[tuple[int, str]]) -> None:
            try:
                code, output = done.result()
                results = read_report(report)[1] if report.exists() else []
                outer.set_result(SuiteRun(code, results, output))
            except BaseException as error:  # surfaced to whoever waits on the run
                outer.set_exception(error)

        inner.add_done_callback(finish)
        return outer

    def __enter__(self) -> PytestPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self._executor.shutdown()
        self._scratch.cleanup()
