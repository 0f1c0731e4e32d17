"""One grading run: grade's options, the candidates they name, the tests that can see them.

`grade` (one set of candidates) and `classroom` (one run per submission folder) both
build on it: each run is forked from this warm process (`suites.ForkedRun`).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from .candidates import VARIABLE_BY_PACKAGE, VARIABLES, folder_assignments, select_test_files
from .plugin import DEFAULT_MEMORY_MIB, DEFAULT_TIMEOUT_S, default_workers
from .results import gradescope_keys, package_of, parse_visibility
from .suites import ForkedRun, drill_suite_paths, grading_args, suite_paths


class UsageError(Exception):
    pass


def _variable_for(key: str) -> str:
    if key in VARIABLES:
        return key
    if key in VARIABLE_BY_PACKAGE:
        return VARIABLE_BY_PACKAGE[key].name
    if key.lower() in VARIABLE_BY_PACKAGE and VARIABLE_BY_PACKAGE[key.lower()].is_drill:
        return VARIABLE_BY_PACKAGE[key.lower()].name  # a drill id in any case: P19, p19
    packages = ", ".join(p for p, v in VARIABLE_BY_PACKAGE.items() if not v.is_drill)
    drills = ", ".join(p for p, v in VARIABLE_BY_PACKAGE.items() if v.is_drill)
    known = packages + (f"; a drill: {drills}" if drills else "")
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


def parse_options(argv: list[str]) -> argparse.Namespace:
    """grade's own options (before any `--`), checked; `grade -h` prints them all."""
    parser = argparse.ArgumentParser(prog="grade", add_help=False)
    parser.add_argument("candidates", nargs="*")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S)
    parser.add_argument("--memory-limit", type=int, default=DEFAULT_MEMORY_MIB)
    parser.add_argument("--workers", type=int, default=default_workers())
    parser.add_argument("--full", action="store_true")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--junitxml", type=Path)
    parser.add_argument("--gradescope", type=Path)
    parser.add_argument("--gradescope-points", type=float)
    parser.add_argument("--gradescope-visibility", action="append", default=[])
    options = parser.parse_args(argv)
    if options.timeout <= 0:
        raise UsageError(f"--timeout must be > 0 seconds, got {options.timeout:g}")
    if options.workers < 1:
        raise UsageError(f"--workers must be >= 1, got {options.workers}")
    if options.memory_limit < 0:
        raise UsageError(f"--memory-limit must be >= 0 MiB, got {options.memory_limit}")
    points = options.gradescope_points
    if points is not None and not 0 < points < float("inf"):
        raise UsageError(f"--gradescope-points must be a positive number, got {points:g}")
    try:
        chosen = parse_visibility(options.gradescope_visibility, gradescope_keys())
    except ValueError as error:
        raise UsageError(str(error)) from None
    options.gradescope_visibility = chosen
    return options


# Collection imports the candidates; the run waits this long past the per-test limit
# for it (a module that hangs or ends its process while imported gets no verdict).
IMPORT_ALLOWANCE_S = 60.0


def swapped_variables(assignments: dict[str, str]) -> set[str]:
    return {v for v, module in assignments.items() if module != VARIABLES[v].default_module}


def selection(
    root: Path, assignments: dict[str, str], full: bool = False
) -> tuple[list[str], list[str]]:
    """(test paths to run, packages left to the references' verdict) for these candidates.

    A drill's suite joins the run only when that drill is graded; a run that grades
    drills alone lists no mechanism as `reference, not re-run`.
    """
    paths = suite_paths(root)
    swapped = swapped_variables(assignments)
    if full or not swapped:
        return paths + drill_suite_paths(root, sorted(assignments)), []
    ladder = ladder_packages(paths) if any(not VARIABLES[v].is_drill for v in swapped) else []
    return selected_files(root, swapped), ladder


def selected_files(root: Path, swapped: set[str]) -> list[str]:
    """The test files that can see these swapped variables: those of the mechanisms'
    suites and the integration slice that name one, and a swapped drill's own suite."""
    paths = suite_paths(root) + drill_suite_paths(root, sorted(swapped))
    return select_test_files(paths, swapped)


def ladder_packages(paths: list[str]) -> list[str]:
    """The package of every suite folder (the scorecard lists each)."""
    return [package_of(Path(path) / "x") for path in paths]


def grade_run(
    paths: list[str],
    assignments: dict[str, str],
    options: argparse.Namespace,
    pytest_args: list[str],
    ladder: list[str],
    *,
    log: Path | None = None,
    limit: float | None = None,
) -> ForkedRun:
    """One grading run, forked from this warm process (see ForkedRun)."""
    junit = [f"--junitxml={options.junitxml.resolve()}"] if options.junitxml else []
    args = [
        "-m",
        "contract",
        "-q",
        "--tb=line",
        "-rN",
        "--gptlab-scorecard",
        f"--gptlab-not-rerun={','.join(ladder)}",
        *grading_args(options.timeout, options.memory_limit, options.workers),
        *junit,
        *pytest_args,
    ]
    names = ", ".join(f"{variable}={module}" for variable, module in assignments.items())
    return ForkedRun(
        paths,
        assignments,
        args,
        log=log,
        capture=log is not None,
        clear_variables=log is not None,
        import_limit=options.timeout + IMPORT_ALLOWANCE_S if assignments else None,
        limit=limit,
        describe=names,
    )
