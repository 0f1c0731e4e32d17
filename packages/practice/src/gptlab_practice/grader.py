"""The one module that reaches the grading machinery (gptlab_testkit's public runners).

A stage check is the grader's own run, narrowed to one stage: the candidate file is
set in its variable (loaded by the testkit's candidate machinery, so plain-name
imports of its `_attempt` siblings reach them), the suites are only the packages
the stage draws from, `-m contract` plus the practice selection plugin keep only
the stage's tests, and `grading_args` gives the grader's protection (per-test time
limit, crash isolation in forked test processes, a memory limit, a scratch working folder).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path

from gptlab_testkit import OWNERS, VARIABLES, ForkedRun, TestResult, grading_args, warm_up

from .stages import RESOLVE_SEPARATOR, Mechanism, TestIdentity

# The grader's own per-test limit: an honest test takes well under a second on an idle
# machine, but a first test pays for the worker's imports and a loaded machine is slow.
DEFAULT_TIMEOUT_S = 60.0
DEFAULT_MEMORY_MIB = 4096
DEFAULT_WORKERS = 1  # one forked test process: crash isolation without a second torch import
# Importing the attempt (collection) is bounded apart from the per-test limit.
IMPORT_ALLOWANCE_S = 30.0

# pytest.exit's line in a serial run; the worker's traceback line under xdist.
_CANDIDATE_ERROR = re.compile(r"(?:candidate error|CandidateError): (.*)")


def variable_of(package: str) -> str:
    for variable in VARIABLES.values():
        if variable.package == package:
            return variable.name
    raise KeyError(package)


def unit_variable(unit: Mechanism) -> str:
    """The variable a unit's attempt is graded through (`TINY_GPT_MODULE`, `DRILL_P19_MODULE`)."""
    return unit.drill.variable if unit.drill else variable_of(unit.suite)


def attempt_filename(unit: Mechanism | str) -> str:
    """The attempt's file name: `tiny_gpt_attempt.py` (the seed's), `p19_attempt.py` (a drill),
    `modern_lm_layer_reconstruction_attempt.py` (a named re-solve)."""
    if isinstance(unit, Mechanism) and unit.drill:
        return f"{unit.drill.stems[0]}_attempt.py"
    package = unit.suite if isinstance(unit, Mechanism) else unit
    stem = VARIABLES[variable_of(package)].stems[0]
    if isinstance(unit, Mechanism) and unit.resolve_of:
        stem += "_" + unit.package.partition(RESOLVE_SEPARATOR)[2]
    return f"{stem}_attempt.py"


def graded_names(unit: Mechanism | str) -> tuple[str, ...]:
    if isinstance(unit, Mechanism) and unit.drill:
        return unit.drill.graded
    package = unit.suite if isinstance(unit, Mechanism) else unit
    return VARIABLES[variable_of(package)].required_names


def repair_drills(owner: str, practising: str) -> tuple[str, ...]:
    """The drills (ids) that own a failed invariant, first to start; never the unit itself."""
    row = OWNERS.get(owner)
    return tuple(d for d in (row.drills if row else ()) if d != practising)


def related_drills(owner: str) -> tuple[str, ...]:
    """Drills named as related when no drill owns the invariant (repair it in its stage)."""
    row = OWNERS.get(owner)
    return row.related if row and not row.drills else ()


def repair_target(owner: str) -> tuple[str, str]:
    """(mechanism, repair target) of a routing owner."""
    row = OWNERS.get(owner)
    return (row.mechanism, row.repair) if row else (owner, "")


def rubric_rows(results: list[TestResult], package: str, build: str) -> list[dict[str, object]]:
    """A check's own run as the rows of `grade --json`'s `rubric` field, by grade's rule: a
    build's contract tests, each in its owner's rubric dimension (the routing table's
    `rubric`); a test the scoring policy held is neither passed nor failed."""
    rows: dict[str, dict[str, object]] = {}
    for result in results:
        row_owner = OWNERS.get(result.owner)
        dimension = row_owner.rubric if row_owner is not None else None
        counted = result.outcome in ("passed", "failed") and not getattr(result, "held", False)
        if result.package != package or result.kind != "contract" or not dimension or not counted:
            continue
        row = rows.setdefault(
            dimension,
            {"build": build, "dimension": dimension, "passed": 0, "run": 0, "failed_owners": []},
        )
        row["run"] = int(str(row["run"])) + 1
        if result.outcome == "passed":
            row["passed"] = int(str(row["passed"])) + 1
        elif isinstance(failed := row["failed_owners"], list) and result.owner not in failed:
            failed.append(result.owner)
    return list(rows.values())


def identity(result: TestResult) -> TestIdentity:
    return TestIdentity.from_nodeid(result.nodeid, result.package, result.owner, result.tiers)


@dataclass
class StageRun:
    returncode: int
    results: list[TestResult]  # the selected tests, in collection order
    problem: str  # one line when the attempt could not be graded at all, else ""
    wall_s: float


def run_stage(
    root: Path,
    mechanism: Mechanism,
    stage: int,
    attempt: Path,
    *,
    timeout: float = DEFAULT_TIMEOUT_S,
    memory_limit: int = DEFAULT_MEMORY_MIB,
    workers: int = DEFAULT_WORKERS,
) -> StageRun:
    """Grade `attempt` on stage `stage` of `mechanism` (and the stages before it).

    The run is forked from this process once it holds torch and the references (the
    grader's warm start): a check costs one torch import, paid by the command itself.
    The attempt is imported in the fork, under a time limit of its own.
    """
    paths = [str(root.resolve() / suite) for suite in mechanism.suites_through(stage)]
    # A drill's run is its own folder, whole; a mechanism's stage is narrowed by the plugin.
    selection = (
        []
        if mechanism.drill
        else ["-p", "gptlab_practice.selection", f"--practice-stage={mechanism.package}:{stage}"]
    )
    started = time.perf_counter()
    warm_up()
    run = ForkedRun(
        paths,
        {unit_variable(mechanism): str(attempt.resolve())},
        [
            "-m",
            "contract",
            *selection,
            "-q",
            "--tb=no",
            *grading_args(timeout, memory_limit, workers),
        ],
        clear_variables=True,
        import_limit=timeout + IMPORT_ALLOWANCE_S,
        describe=f"the attempt {attempt.name}",
    ).wait()
    wall = time.perf_counter() - started
    problem = _problem(run.returncode, run.results, run.output, run.problem)
    return StageRun(run.returncode, run.results, problem, wall)


def _problem(returncode: int, results: list[TestResult], output: str, stopped: str) -> str:
    """Why nothing was graded: the candidate's one-line error, why the run was stopped
    (an import past its limit, a process that died), or pytest's last words."""
    if results:
        return ""
    found = _CANDIDATE_ERROR.search(output)
    if found:
        return found.group(1).strip()
    if stopped:
        return stopped
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    tail = lines[-1] if lines else ""
    return f"the grader selected no test (pytest exit status {returncode}): {tail}"[:400]
