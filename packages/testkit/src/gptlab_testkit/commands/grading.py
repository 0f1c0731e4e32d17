"""One grading run: grade's options, the candidates they name, the tests that can see them.

`grade` (one set of candidates) and `classroom` (one run per submission folder) both
build on it: each run is forked from this warm process (`suites.ForkedRun`).
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import os
import time
from dataclasses import replace
from pathlib import Path

from gptlab_testkit.candidates import (
    VARIABLE_BY_PACKAGE,
    VARIABLES,
    folder_assignments,
)
from gptlab_testkit.commands.gradescope import gradescope_keys, parse_visibility
from gptlab_testkit.commands.suggest import did_you_mean
from gptlab_testkit.judge.defaults import (
    DEFAULT_MEMORY_MIB,
    DEFAULT_TIMEOUT_S,
    JUDGE_VARIABLE,
    default_workers,
)
from gptlab_testkit.loading.attempts import SubmissionLinkError, refuse_links
from gptlab_testkit.loading.checkout import CheckoutError, find_checkout
from gptlab_testkit.running.expected import (
    Expected,
    judged_returncode,
    list_expected,
    reference_skips,
    skipped_by_run,
    verdicts,
)
from gptlab_testkit.running.results import TestResult, package_of
from gptlab_testkit.running.suites import (
    ForkedRun,
    SuiteRun,
    drill_suite_paths,
    grading_args,
    selected_files,
    suite_paths,
)


class UsageError(Exception):
    pass


class RefusedSubmissionError(UsageError):
    """The submission holds a symbolic link: nothing is graded, and grade's outputs (its
    JSON, Gradescope's results.json) say so with nothing earned."""


def _without_links(path: Path, *, travelling: bool = False) -> None:
    """A submission's files are read without following links (`attempts.refuse_links`)."""
    try:
        refuse_links(path, travelling=travelling)
    except SubmissionLinkError as error:
        raise RefusedSubmissionError(str(error)) from None
    except OSError:
        return  # absent: the caller says so in its own words


def _variable_for(key: str) -> str:
    if key in VARIABLES:
        return key
    if key in VARIABLE_BY_PACKAGE:
        return VARIABLE_BY_PACKAGE[key].name
    if key.lower() in VARIABLE_BY_PACKAGE and VARIABLE_BY_PACKAGE[key.lower()].is_drill:
        return VARIABLE_BY_PACKAGE[key.lower()].name  # a drill id in any case: P19, p19
    packages = [p for p, v in VARIABLE_BY_PACKAGE.items() if not v.is_drill]
    drills = sorted(p for p, v in VARIABLE_BY_PACKAGE.items() if v.is_drill)
    stems = [stem for v in VARIABLES.values() for stem in v.stems]  # the seed's tiny_gpt too
    hint = did_you_mean(key, [*packages, *drills, *VARIABLES, *stems])
    known = ", ".join(packages)
    if drills:
        known += f"; a drill id: {drills[0]} ... {drills[-1]} ({len(drills)} in all)"
    raise UsageError(f"unknown package {key!r}{hint}: expected {known}; or a *_MODULE variable")


def _module_value(key: str, value: str) -> str:
    """A `.py` path (made absolute: pytest runs elsewhere) or an importable module name,
    checked now: an empty value, a missing file or an unknown module is refused."""
    if not value.strip():
        raise UsageError(f"{key}={value}: no candidate given (a .py file or a module name)")
    path = Path(value).expanduser()
    if value.endswith(".py") or os.sep in value or path.is_dir():
        _without_links(path, travelling=True)
        if path.is_dir():
            raise UsageError(f"{key}={value}: a folder; give the .py file, or the folder alone")
        if not path.is_file():
            siblings = [p.name for p in path.parent.glob("*.py")] if path.parent.is_dir() else []
            hint = did_you_mean(path.name, siblings)
            raise UsageError(f"candidate file not found: {value}{hint}")
        return str(path.resolve())
    top = value.split(".")[0]
    if not (Path.cwd() / f"{value}.py").is_file() and importlib.util.find_spec(top) is None:
        raise UsageError(f"{key}={value}: no module {top!r} can be imported here, nor {value}.py")
    return value


def _file_module(argument: str) -> dict[str, str]:
    """A lone `.py` file named like one of the seed's (`kv_cache.py`, `tiny_gpt_attempt.py`)."""
    _without_links(Path(argument).expanduser(), travelling=True)
    path = Path(argument).expanduser().resolve()
    found = folder_assignments(path.parent)
    variables = [v for v, file in found.items() if file == path]
    if not variables:
        raise UsageError(
            f"{argument}: its name is none of the seed's files: name its package first "
            f"(grade kv_cache {argument})"
        )
    return {variables[0]: str(path)}


def _folder_modules(folder: Path) -> dict[str, str]:
    _without_links(folder)  # the folder itself and every entry in it, at any depth
    folder = folder.resolve()
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
            assignments[_variable_for(pending)] = _module_value(pending, argument)
            pending = None
        elif "=" not in argument and Path(argument).expanduser().is_dir():
            assignments.update(_folder_modules(Path(argument).expanduser()))
        elif "=" not in argument and Path(argument).expanduser().is_file():
            assignments.update(_file_module(argument))
        elif "=" in argument:
            key, value = argument.split("=", 1)
            variable = _variable_for(key)  # the key first: its typo is the likelier one
            assignments[variable] = _module_value(key, value)
        elif argument.endswith(".py") or os.sep in argument:
            raise UsageError(f"{argument}: no such file or folder")
        else:
            _variable_for(argument)
            pending = argument
    if pending is not None:
        raise UsageError(f"{pending}: missing the candidate path or module after it")
    return assignments


class _Parser(argparse.ArgumentParser):
    """argparse that raises UsageError (one line, no usage block, no exit)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(message)


def number(text: str) -> float:
    """A finite number: NaN or an infinity would pass every `<= 0` check and disable a limit."""
    value = float(text)
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text!r}")
    return value


def _unknown_option(parser: argparse.ArgumentParser, extras: list[str]) -> None:
    option = next((extra for extra in extras if extra.startswith("-")), None)
    if option is not None:
        known = [name for action in parser._actions for name in action.option_strings]
        hint = did_you_mean(option.split("=", 1)[0], known)
        raise UsageError(f"unknown option {option}{hint}; grade -h lists them")


def parse_options(argv: list[str]) -> argparse.Namespace:
    """grade's own options (before any `--`), checked; `grade -h` prints them all.

    Every answer comes before torch is imported: a typo costs well under a second.
    """
    parser = _Parser(prog="grade", add_help=False, allow_abbrev=False)
    parser.add_argument("candidates", nargs="*")
    parser.add_argument("--root", type=Path)
    parser.add_argument("--timeout", type=number, default=DEFAULT_TIMEOUT_S)
    parser.add_argument("--memory-limit", type=int, default=DEFAULT_MEMORY_MIB)
    parser.add_argument("--workers", type=int, default=default_workers())
    parser.add_argument("--full", action="store_true")
    parser.add_argument("--judge", action="store_true")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--junitxml", type=Path)
    parser.add_argument("--gradescope", type=Path)
    parser.add_argument("--gradescope-points", type=number)
    parser.add_argument("--gradescope-visibility", action="append", default=[])
    parser.add_argument("--deadline", type=number)
    options, extras = parser.parse_known_args(argv)
    _unknown_option(parser, extras)
    options.candidates += extras  # positional arguments after an option
    try:
        options.root = find_checkout(options.root)
    except CheckoutError as error:
        raise UsageError(str(error)) from None
    if options.timeout <= 0:
        raise UsageError(f"--timeout must be > 0 seconds, got {options.timeout:g}")
    if options.workers < 1:
        raise UsageError(f"--workers must be >= 1, got {options.workers}")
    if options.deadline is not None and options.deadline <= 0:
        raise UsageError(f"--deadline must be > 0 seconds, got {options.deadline:g}")
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
# The pool ends a test this long past the per-test limit (isolation.ForkPool).
POOL_GRACE_S = 10.0
# No run of candidates lasts longer than this unless --deadline says so.
DEADLINE_CAP_S = 1800.0


def overall_deadline(listed: int, timeout: float) -> float:
    """Seconds a run of candidates may take once released, whatever its code does:
    collection (the per-test limit + IMPORT_ALLOWANCE_S) plus every listed test at its
    limit run one after another (+ POOL_GRACE_S each), capped at DEADLINE_CAP_S. Past
    it grade ends the run's whole process tree, and what it did not report fails."""
    return min(DEADLINE_CAP_S, timeout + IMPORT_ALLOWANCE_S + listed * (timeout + POOL_GRACE_S))


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
) -> JudgedRun:
    """One grading run, forked from this warm process (see ForkedRun)."""
    junit = [f"--junitxml={options.junitxml.resolve()}"] if options.junitxml else []
    # A candidate's grade prints its own verdict after the run (`expected.verdict_lines`):
    # the run's scorecard would print the same table again, so only a class log keeps it.
    # Each failure is one routed line with where it raised (`--tb=short` for tracebacks);
    # a learner's screen names three per owner, a class log every one.
    scorecard = log is not None or not swapped_variables(assignments)
    shown = 0 if log is not None else 3
    args = [
        "-m",
        "contract",
        "-q",
        "--tb=no",
        "-rN",
        f"--gptlab-failures-shown={shown}",
        *(["--gptlab-scorecard"] if scorecard else []),
        f"--gptlab-not-rerun={','.join(ladder)}",
        *grading_args(options.timeout, options.memory_limit, options.workers),
        *junit,
        *pytest_args,
    ]
    names = ", ".join(f"{variable}={module}" for variable, module in assignments.items())
    judging = {JUDGE_VARIABLE: "all" if getattr(options, "judge", False) else "default"}
    judging |= {"GPTLAB_JUDGE_TIMEOUT": f"{options.timeout:g}"}
    judging |= {"GPTLAB_JUDGE_MEMORY_MIB": str(options.memory_limit)}
    judging |= {"GPTLAB_JUDGE_TRUSTED": ""}  # only known_bad's own fixtures are trusted
    judging |= {"GPTLAB_JUDGE_UNSANDBOXED": ""}  # grade's workers: always in the sandbox
    run = ForkedRun(
        paths,
        {**assignments, **judging},
        args,
        log=log,
        capture=log is not None,
        clear_variables=log is not None,
        import_limit=options.timeout + IMPORT_ALLOWANCE_S if assignments else None,
        limit=limit,
        describe=names,
        hold=True,
    )
    # Fixed before any candidate code runs (a class lists once per set of variables): the
    # run (and its workers' interpreters) starts meanwhile, held before its conftests.
    try:
        expected = _expected(paths, assignments, args) if swapped_variables(assignments) else None
    except BaseException:
        run.kill()
        raise
    run.release()
    if expected is not None:  # a run of candidates always ends (nothing but references: no)
        listed = sum(test.outcome != "skipped" for test in expected.tests)
        deadline = getattr(options, "deadline", None)
        run.limit_from_now(deadline or overall_deadline(listed, options.timeout))
    return JudgedRun(run, expected)


_LISTED: dict[tuple[object, ...], Expected] = {}


def _expected(paths: list[str], assignments: dict[str, str], args: list[str]) -> Expected:
    swapped = swapped_variables(assignments)
    key = (os.getcwd(), tuple(paths), frozenset(swapped), tuple(args))  # paths are relative
    if key not in _LISTED:
        listed = {variable: assignments[variable] for variable in swapped}
        _LISTED[key] = list_expected(paths, listed, args)
    return _LISTED[key]


class JudgedRun:
    """A forked run whose verdicts are decided here, against the tests listed before it
    started (`expected.verdicts`): what the run skipped or never reported fails."""

    def __init__(self, run: ForkedRun, expected: Expected | None) -> None:
        self.run = run
        self.expected = expected

    def poll(self) -> SuiteRun | None:
        result = self.run.poll()
        if result is None or self.expected is None or self.expected.problem:
            return result
        if result.forfeit:  # every listed test fails, saying why (results: none read)
            result.results = forfeited(self.expected, result.problem)
            result.returncode = 1  # a failing verdict (not a broken grading process)
            return result
        if not result.results and result.returncode != 0:
            # No verdict at all (a candidate error): no credit, and every listed test
            # counts as not run, so the tables read 0 of the expected tests.
            why = result.problem or f"the run reported no test (exit {result.returncode})"
            result.results = forfeited(self.expected, f"not graded: {why}")
            result.not_graded = True
            return result
        skipped = skipped_by_run(self.expected, result.results)
        environment = reference_skips(skipped, self.run.paths) if skipped else {}
        result.results = verdicts(self.expected, result.results, environment)
        result.returncode = judged_returncode(result.returncode, result.results)
        return result

    def limit_from_now(self, seconds: float) -> None:
        self.run.limit_from_now(seconds)

    def wait(self) -> SuiteRun:
        while (result := self.poll()) is None:
            time.sleep(0.05)
        return result

    def kill(self) -> None:
        self.run.kill()


def forfeited(expected: Expected, why: str) -> list[TestResult]:
    """A run that earns nothing: every listed test failed, its reason `why` (the grader's
    own declared skips stay skipped)."""
    return [
        test if test.outcome == "skipped" else replace(test, outcome="failed", reason=why)
        for test in verdicts(expected, [])
    ]
