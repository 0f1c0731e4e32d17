"""`nox -s grade`: grade the whole slice, swapping in any candidates given.

    python -m gptlab_testkit.grade                         # references
    python -m gptlab_testkit.grade kv_cache attempt.py     # one candidate
    python -m gptlab_testkit.grade kv_cache=a.py speculative=b.py -- -x
    python -m gptlab_testkit.grade path/to/attempt_folder  # seed-style folder

Prints which module is graded for every variable, then the contract suites'
scorecard (per package, per tier for tinygpt), then each failure's owner and
repair target. Exit status is pytest's (non-zero when anything failed).

The candidate's code runs with your rights. Each test runs in a pytest-xdist
worker from a scratch working directory, under a per-test time limit and a memory
limit; a test that hangs, exits its process, aborts or crashes fails and is routed
like any other, and the rest of the suite still runs.

Options (before any `--`):
  --timeout SECONDS     per-test time limit (default 60)
  --memory-limit MIB    address-space limit of each test process (default 4096; 0: none)
  --workers N           test processes side by side (default: CPU count, at most 4)
  --json PATH           every test as JSON: package, tiers, owner, kind, outcome,
                        duration, one-line reason (the scorecard is computed from it)
  --junitxml PATH       pytest's JUnit XML

A whole class: `--submissions DIR [--shard I/N] [--out OUT]` and `merge OUT A.json ...`
(see `python -m gptlab_testkit.classroom -h`).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from .candidates import VARIABLE_BY_PACKAGE, VARIABLES, folder_assignments
from .reporting import graded_modules, module_lines
from .results import write_report
from .suites import run_pytest, suite_paths

# The slowest honest contract test takes a few seconds on a 2-core machine; the limit
# leaves a wide margin for slower or busier machines.
DEFAULT_TIMEOUT_S = 60.0
DEFAULT_MEMORY_MIB = 4096


def default_workers() -> int:
    return max(1, min(4, os.cpu_count() or 1))


USAGE = __doc__ or ""


class UsageError(Exception):
    pass


def _variable_for(key: str) -> str:
    if key in VARIABLES:
        return key
    if key in VARIABLE_BY_PACKAGE:
        return VARIABLE_BY_PACKAGE[key].name
    known = ", ".join(VARIABLE_BY_PACKAGE)
    raise UsageError(f"unknown package {key!r}: expected one of {known} (or a *_MODULE variable)")


def _module_value(value: str) -> str:
    """A path that exists is made absolute (pytest may run elsewhere); else a module name."""
    path = Path(value).expanduser()
    if value.endswith(".py"):
        if not path.is_file():
            raise UsageError(f"candidate file not found: {value}")
        return str(path.resolve())
    return value


def _folder_modules(folder: Path) -> dict[str, str]:
    found = folder_assignments(folder)
    if not found:
        names = ", ".join(f"{stem}.py" for v in VARIABLES.values() for stem in v.stems)
        raise UsageError(f"{folder}: no module named like the seed's files ({names})")
    return {variable: str(path) for variable, path in found.items()}


def parse_assignments(arguments: list[str]) -> dict[str, str]:
    """`pkg path`, `pkg=path`, `VARIABLE=path` pairs or attempt folders -> {VARIABLE: module}.

    A folder maps its seed-named modules (see `folder_assignments`); later arguments
    override what an earlier folder mapped.
    """
    assignments: dict[str, str] = {}
    pending: str | None = None
    for argument in arguments:
        if pending is not None:
            assignments[_variable_for(pending)] = _module_value(argument)
            pending = None
        elif "=" not in argument and Path(argument).expanduser().is_dir():
            assignments.update(_folder_modules(Path(argument).expanduser().resolve()))
        elif "=" in argument:
            key, value = argument.split("=", 1)
            assignments[_variable_for(key)] = _module_value(value)
        else:
            _variable_for(argument)
            pending = argument
    if pending is not None:
        raise UsageError(f"{pending}: missing the candidate path or module after it")
    return assignments


def _options(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="grade", description=USAGE.split("\n\n")[0], add_help=False
    )
    parser.add_argument("candidates", nargs="*")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S)
    parser.add_argument("--memory-limit", type=int, default=DEFAULT_MEMORY_MIB)
    parser.add_argument("--workers", type=int, default=default_workers())
    parser.add_argument("--json", type=Path)
    parser.add_argument("--junitxml", type=Path)
    options = parser.parse_args(argv)
    if options.timeout <= 0:
        raise UsageError(f"--timeout must be > 0 seconds, got {options.timeout:g}")
    if options.workers < 1:
        raise UsageError(f"--workers must be >= 1, got {options.workers}")
    if options.memory_limit < 0:
        raise UsageError(f"--memory-limit must be >= 0 MiB, got {options.memory_limit}")
    return options


# Importing a candidate also imports torch and the project's packages.
IMPORT_ALLOWANCE_S = 60.0


def import_problem(assignments: dict[str, str], timeout: float) -> str | None:
    """Import the candidates once in a throwaway process, bounded in time.

    The per-test limit does not cover collection, where candidates are imported: a
    module that hangs or ends its process while being imported would stop grading
    with no verdict. Ordinary import errors are left to pytest's one-line report.
    """
    if not assignments:
        return None
    names = ", ".join(f"{variable}={module}" for variable, module in assignments.items())
    limit = timeout + IMPORT_ALLOWANCE_S
    code = "import sys\nfrom gptlab_testkit.candidates import load_candidate\n" + "".join(
        f"try:\n    load_candidate({variable!r})\nexcept Exception:\n    pass\n"
        for variable in assignments
    )
    with tempfile.TemporaryDirectory(prefix="gptlab-import-") as scratch:
        try:
            completed = subprocess.run(
                [sys.executable, "-c", code],
                env={**os.environ, **assignments},
                cwd=scratch,
                capture_output=True,
                timeout=limit,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return f"importing {names} did not finish within {limit:g} s"
    if completed.returncode != 0:
        return f"the process importing {names} died (exit status {completed.returncode})"
    return None


def grading_args(timeout: float, memory_limit: int, workers: int) -> list[str]:
    """pytest options that let a run survive its candidate (shared with the ladder)."""
    return [
        f"--numprocesses={workers}",
        "--max-worker-restart=1000",  # bounded by the plugin's stop list, not by xdist
        f"--timeout={timeout:g}",
        "--timeout-method=signal",
        f"--gptlab-memory-limit={memory_limit}",
    ]


def main(argv: list[str]) -> int:
    if "-h" in argv or "--help" in argv:
        print(USAGE)
        return 0
    own, pytest_args = (
        (argv[: argv.index("--")], argv[argv.index("--") + 1 :]) if "--" in argv else (argv, [])
    )
    if any(arg == "--submissions" or arg.startswith("--submissions=") for arg in own) or (
        own and own[0] == "merge"
    ):
        from .classroom import main as grade_class

        return int(grade_class(own, pytest_args))
    try:
        options = _options(own)
        assignments = parse_assignments(options.candidates)
    except UsageError as error:
        print(f"grade: {error}", file=sys.stderr)
        return 2

    os.environ.update(assignments)
    stuck = import_problem(assignments, options.timeout)
    if stuck:
        print(f"grade: candidate error: {stuck}", file=sys.stderr)
        return 4
    print("gptlab grade: modules graded")
    for line in module_lines():
        print("  " + line)
    print(flush=True)
    junit = [f"--junitxml={options.junitxml.resolve()}"] if options.junitxml else []
    run = run_pytest(
        suite_paths(Path.cwd()),
        assignments,
        [
            "-m",
            "contract",
            "-q",
            "--tb=line",
            "-rN",
            "--gptlab-scorecard",
            *grading_args(options.timeout, options.memory_limit, options.workers),
            *junit,
            *pytest_args,
        ],
        capture=False,
        scratch_cwd=True,
    )
    if options.json:
        write_report(options.json, run.results, graded_modules(), returncode=run.returncode)
    return run.returncode


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
