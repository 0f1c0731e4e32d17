"""Run a pytest suite in a subprocess and read its routed results back."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
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
) -> SuiteRun:
    """pytest in a fresh interpreter, so each candidate is imported into a clean process."""
    env = {**os.environ, **env_overrides}
    with tempfile.TemporaryDirectory(prefix="gptlab-") as scratch:
        report = Path(scratch) / "report.json"
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
