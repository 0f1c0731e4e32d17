"""`nox -s known_bad`: prove the ladder catches every known-bad candidate.

    python -m gptlab_testkit.known_bad integration_tests/known_bad [-k SUBSTRING]

Each `bad_*.py` in the folder declares the variable it is swapped in through and
the owner the ladder must route it to:

    \"\"\"Blocks kept in a plain Python list.\"\"\"
    VARIABLE = "TINY_GPT_MODULE"
    EXPECTED_OWNER = "registration"

Every candidate is graded like `grade` does (contract tests, fresh process) on
the suite of the package it replaces. A candidate whose mistake breaks one of this
project's extensions rather than CONTRACTS.md declares `SCOPE = "all"` and is
graded on the whole suite, extension tests included. A hostile candidate (one that
hangs, ends its process, aborts, segfaults or allocates without bound) declares
`RUN = "isolated"` and is graded under `grade`'s own isolation (xdist worker,
per-test time limit, memory limit). A candidate is caught when that suite
fails and at least one failure is routed to EXPECTED_OWNER. The references must
pass the same suites. Prints a table and `known-bad caught: N/M`.

`--faithful DIR` holds candidates that must pass: `good_*.py` files (graded on their
package's contract suite and the slice) and seed-style attempt folders (every module
the folder maps, graded together on their packages' contract suites and the slice).
"""

from __future__ import annotations

import argparse
import ast
import os
import sys
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from .candidates import VARIABLES, folder_assignments
from .grade import grading_args
from .owners import OWNERS
from .reporting import failed_owners, table
from .suites import PytestPool, SuiteRun, run_pytest

_QUIET_ARGS = ("-q", "--tb=no", "--no-header")
SCOPES = {"contract": ("-m", "contract", *_QUIET_ARGS), "all": _QUIET_ARGS}
# Hostile candidates: a short limit keeps the ladder quick; honest tests take seconds.
ISOLATED_TIMEOUT_S = 20.0
ISOLATED_MEMORY_MIB = 4096
RUNS = {
    "in-process": (),
    "isolated": tuple(grading_args(ISOLATED_TIMEOUT_S, ISOLATED_MEMORY_MIB, workers=1)),
}


@dataclass(frozen=True)
class KnownBad:
    path: Path
    mistake: str
    variable: str
    expected_owner: str
    scope: str = "contract"
    run: str = "in-process"

    @property
    def suite(self) -> Path:
        return Path("packages") / VARIABLES[self.variable].package / "tests"


def _manifest(path: Path) -> dict[str, str]:
    """The module constants and first docstring line, read without importing the candidate."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    constants: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
            for target in node.targets:
                if isinstance(target, ast.Name) and isinstance(node.value.value, str):
                    constants[target.id] = node.value.value
    docstring = (ast.get_docstring(tree) or "").strip().splitlines()
    if not docstring:
        raise ValueError(f"{path.name}: the docstring's first line must say what it is")
    variable = constants.get("VARIABLE", "")
    if variable not in VARIABLES:
        raise ValueError(
            f"{path.name}: VARIABLE must be one of {sorted(VARIABLES)}, got {variable!r}"
        )
    return {**constants, "variable": variable, "mistake": docstring[0]}


def read_known_bad(path: Path) -> KnownBad:
    """Read the declaration without importing the candidate."""
    manifest = _manifest(path)
    owner = manifest.get("EXPECTED_OWNER", "")
    if owner not in OWNERS:
        raise ValueError(f"{path.name}: EXPECTED_OWNER {owner!r} is not a routing.toml key")
    scope = manifest.get("SCOPE", "contract")
    if scope not in SCOPES:
        raise ValueError(f"{path.name}: SCOPE must be one of {sorted(SCOPES)}, got {scope!r}")
    run = manifest.get("RUN", "in-process")
    if run not in RUNS:
        raise ValueError(f"{path.name}: RUN must be one of {sorted(RUNS)}, got {run!r}")
    return KnownBad(path, manifest["mistake"], manifest["variable"], owner, scope, run)


@dataclass
class Verdict:
    candidate: KnownBad
    run: SuiteRun

    @property
    def failed(self) -> int:
        return sum(result.outcome == "failed" for result in self.run.results)

    @property
    def owners(self) -> set[str]:
        return failed_owners(self.run.results)

    @property
    def caught(self) -> bool:
        return self.run.returncode == 1 and self.candidate.expected_owner in self.owners

    @property
    def label(self) -> str:
        if self.caught:
            return "caught"
        if self.run.returncode not in (0, 1):
            return f"ERROR (pytest exit {self.run.returncode})"
        if self.run.returncode == 0:
            return "MISSED (suite passed)"
        return "MISROUTED"


@dataclass(frozen=True)
class Faithful:
    """A stranger's faithful implementation: it must pass its contract suites and the slice."""

    path: Path
    modules: dict[str, Path]  # variable -> file (one for a good_*.py, several for a folder)

    @property
    def suites(self) -> list[str]:
        packages = sorted(VARIABLES[variable].package for variable in self.modules)
        return [str(Path("packages") / name / "tests") for name in packages] + ["integration_tests"]

    @property
    def env(self) -> dict[str, str]:
        return {variable: str(path.resolve()) for variable, path in self.modules.items()}


def read_faithful(path: Path) -> Faithful:
    """A good_*.py file (declaring VARIABLE) or a seed-style attempt folder."""
    if path.is_dir():
        modules = folder_assignments(path)
        if not modules:
            raise ValueError(f"{path}: faithful folder maps no module (see folder_assignments)")
        return Faithful(path, modules)
    return Faithful(path, {_manifest(path)["variable"]: path})


def faithful_candidates(folder: Path | None, only: str = "") -> list[Faithful]:
    if folder is None:
        return []
    paths = sorted(folder.glob("good_*.py")) + sorted(
        path for path in folder.iterdir() if path.is_dir() and not path.name.startswith((".", "_"))
    )
    return [read_faithful(path) for path in paths if only in path.stem]


def _must_pass(
    pool: PytestPool, suites: set[Path], faithful: list[Faithful]
) -> list[tuple[str, Future[SuiteRun]]]:
    """References pass every suite the ladder uses; faithful ones pass theirs and the slice."""
    runs = [
        (f"reference on {suite}", pool.submit([str(suite)], {}, SCOPES["all"]))
        for suite in sorted(suites)
    ]
    for good in faithful:
        label = f"faithful {good.path.name} on {' + '.join(good.suites)}"
        runs.append((label, pool.submit(good.suites, good.env, SCOPES["contract"])))
    return runs


def _must_fail(
    pool: PytestPool, threads: ThreadPoolExecutor, candidate: KnownBad
) -> Future[SuiteRun]:
    env = {candidate.variable: str(candidate.path.resolve())}
    args = (*SCOPES[candidate.scope], *RUNS[candidate.run])
    if candidate.run == "isolated":
        # Exactly as grade runs it: a fresh interpreter driving xdist workers, not a fork
        # of the pool's server (xdist's controller loses track of crashed workers there).
        suite = str(candidate.suite.resolve())
        return threads.submit(run_pytest, [suite], env, args, scratch_cwd=True)
    return pool.submit([str(candidate.suite)], env, args)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="known_bad", description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path, help="folder of bad_*.py candidates")
    parser.add_argument(
        "--faithful", type=Path, help="folder of good_*.py faithful candidates that must pass"
    )
    parser.add_argument("-k", dest="only", default="", help="grade only names containing this")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args(argv)

    paths = sorted(p for p in args.folder.glob("bad_*.py") if args.only in p.stem)
    if not paths:
        print(f"known_bad: no bad_*.py candidates in {args.folder}", file=sys.stderr)
        return 2
    candidates = [read_known_bad(path) for path in paths]
    faithful = faithful_candidates(args.faithful, args.only)

    started = time.perf_counter()
    problems: list[str] = []
    verdicts: list[Verdict] = []
    with PytestPool(args.jobs) as pool, ThreadPoolExecutor(max_workers=1) as threads:
        passing = _must_pass(pool, {c.suite for c in candidates}, faithful)
        failing = [(candidate, _must_fail(pool, threads, candidate)) for candidate in candidates]
        print("must pass:", flush=True)
        for label, future in passing:
            run = future.result()
            status = "pass" if run.returncode == 0 else f"FAIL (exit {run.returncode})"
            print(f"  {status:<22} {label}", flush=True)
            if run.returncode != 0:
                problems.append(f"{label} must pass:\n{run.output[-3000:]}")
        print("must be caught:", flush=True)
        for candidate, future in failing:
            verdict = Verdict(candidate, future.result())
            verdicts.append(verdict)
            print(f"  {verdict.label:<22} {candidate.path.stem}", flush=True)

    rows = [
        (
            v.candidate.path.stem.removeprefix("bad_"),
            v.candidate.expected_owner,
            v.candidate.scope,
            v.failed,
            ", ".join(sorted(v.owners)) or "-",
            v.label,
        )
        for v in verdicts
    ]
    print()
    headers = ("candidate", "expected owner", "graded on", "tests failed", "owners hit", "verdict")
    for line in table(headers, rows):
        print(line)
    for verdict in verdicts:
        if not verdict.caught:
            problems.append(
                f"{verdict.candidate.path.name} ({verdict.candidate.mistake}) was not caught"
                f" by {verdict.candidate.suite}: {verdict.label}\n{verdict.run.output[-2000:]}"
            )
    caught = sum(v.caught for v in verdicts)
    print(f"\nknown-bad caught: {caught}/{len(verdicts)}  ({time.perf_counter() - started:.0f} s)")
    if faithful:
        print(f"faithful candidates graded: {len(faithful)} (each must pass)")
    for problem in problems:
        print(f"\n{problem}", file=sys.stderr)
    return 0 if not problems else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
