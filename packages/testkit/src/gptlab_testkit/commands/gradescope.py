"""Gradescope's autograder format: results.json from a run's test records.

Contract tests only, after the scoring policy (`scoring`): one row per (package, owner)
that ran, its points, its failures and the drills that repair them; `--points` scales
the total; visibility per owner or package.
"""

from __future__ import annotations

import json
from pathlib import Path

from gptlab_testkit.candidates import VARIABLE_BY_PACKAGE, VARIABLES
from gptlab_testkit.running.owners import OWNERS  # routing.toml, read once
from gptlab_testkit.running.reporting import drill_labels, no_owning_drill
from gptlab_testkit.running.results import TestResult
from gptlab_testkit.running.scoring import scored

GRADESCOPE_OUTPUT_LIMIT = 8000  # characters of one test's output
# Gradescope's visibility values: when a student sees a test (or the whole result).
VISIBILITIES = ("visible", "hidden", "after_due_date", "after_published")


def gradescope_keys() -> set[str]:
    """What `--gradescope-visibility` may name: an owner key or a package tests live in."""

    return {*OWNERS, *(o.package for o in OWNERS.values()), *VARIABLE_BY_PACKAGE, "integration"}


def parse_visibility(
    items: list[str], keys: set[str], option: str = "--gradescope-visibility"
) -> dict[str, str]:
    """`KEY=VISIBILITY` pairs (KEY: an owner key or a package, one of `keys`) -> {KEY: VISIBILITY}.

    A key nobody grades is refused: a typo would otherwise show a test the teacher
    meant to hide.
    """
    chosen: dict[str, str] = {}
    for item in items:
        key, _, value = item.partition("=")
        if not key or value not in VISIBILITIES:
            raise ValueError(
                f"{option} {item!r}: expected OWNER_OR_PACKAGE=VISIBILITY, "
                f"VISIBILITY one of {', '.join(VISIBILITIES)}"
            )
        if key not in keys:
            raise ValueError(
                f"{option} {item!r}: {key!r} is neither an owner key "
                "(routing.toml) nor a graded package"
            )
        chosen[key] = value
    return chosen


def _owner_rows(results: list[TestResult]) -> dict[tuple[str, str], list[TestResult]]:
    """The graded tests that ran, grouped by (package, owner): contract tests only, after
    the scoring policy (a held rejection counts as not earned, an advisory test not at all)."""

    groups: dict[tuple[str, str], list[TestResult]] = {}
    for result in scored(results):
        if result.outcome != "skipped" and result.kind == "contract":
            groups.setdefault((result.package, result.owner), []).append(result)
    return dict(sorted(groups.items()))


def contract_points(results: list[TestResult]) -> tuple[int, int]:
    """(passed, graded): the contract tests that earned, of those graded (Gradescope's
    total before scaling, the class table's points column)."""
    members = [r for group in _owner_rows(results).values() for r in group]
    return sum(r.outcome != "failed" for r in members), len(members)


def _points(count: int, unit: float) -> float | int:
    # 6 decimals: the rows still add up to the assignment's points within 1e-4 (4 did not)
    return count if unit == 1 else round(count * unit, 6)


def _repair_drills(key: str) -> str:
    """`repair drills: P20 ... (25m), ...` for an owner, or where to repair without one."""

    owner = OWNERS.get(key)
    if owner is None:
        return ""
    if owner.drills:
        return f"repair drills: {drill_labels(owner.drills)}"
    return no_owning_drill(owner.package, owner.related) if owner.related else ""


def _ran_with(members: list[TestResult], package: str, swapped: dict[str, str]) -> str:
    """`ran with your kv_cache`: a package the student did not write whose tests ran the
    student's modules ("" for the student's own package)."""

    theirs = sorted(
        {VARIABLES[v].package for r in members for v in r.variables if v in swapped} - {package}
    )
    if not theirs or any(VARIABLES[v].package == package for v in swapped):
        return ""
    return f"{package}'s tests, run with your {' and '.join(theirs)} (the rest: the references)"


def _failure_lines(failed: list[TestResult]) -> list[str]:
    """One line per failed test; tests that never ran for one cause, in one line."""
    not_run = [r for r in failed if r.reason.startswith("not graded: ")]
    lines = [f"- {r.nodeid}: {r.reason}" if r.reason else f"- {r.nodeid}" for r in failed]
    if not_run:
        lines = [line for r, line in zip(failed, lines, strict=True) if r not in not_run]
        lines.append(f"- {len(not_run)} tests not run: the submission was not graded (see above)")
    return lines


def gradescope_payload(
    results: list[TestResult],
    modules: dict[str, str],
    not_rerun: tuple[str, ...] | list[str] = (),
    problem: str = "",
    *,
    points: float | None = None,
    visibility: dict[str, str] | None = None,
    seconds: float | None = None,
    not_graded: bool = False,
) -> dict[str, object]:
    """Gradescope's results.json: one Gradescope test per owner (a routing key) per package.

    An owner's max_score is the number of its graded (contract) tests listed for the run,
    its score the number that passed, and its output the mechanism, the repair target and
    drills, what the row's tests ran (`ran with your kv_cache` for a package the student
    did not write) and each failed test with its one-line reason. One row per owner keeps
    the page readable (a candidate sees ~10 mechanisms, not ~100 test ids) and says what
    to fix. A submission that could not be imported has the same rows, each 0 of its
    tests, and the cause at the top.

    `points` scales every score so the maximum is the assignment's points; `visibility`
    maps an owner key or a package to Gradescope's visibility (an owner key wins);
    `seconds` is the run's wall time (Gradescope's `execution_time`); `not_graded`: the
    run gave no verdict (`problem` says why, first in the output).
    """

    groups = _owner_rows(results)
    passed, ran = contract_points(results)
    unit = points / ran if points is not None and ran else 1.0
    chosen = visibility or {}
    swapped = {name: spec for name, spec in modules.items() if spec != _default(name)}
    tests: list[dict[str, object]] = []
    for (package, key), members in groups.items():
        failed = [r for r in members if r.outcome == "failed"]
        owner = OWNERS.get(key)
        lines = [f"{owner.mechanism}" if owner else key]
        if ran_with := _ran_with(members, package, swapped):
            lines.append(ran_with)
        if failed and owner:
            lines.append(f"repair: {owner.repair}")
            if drills := _repair_drills(key):
                lines.append(drills)
        lines += _failure_lines(failed)
        lines.append(f"{len(members) - len(failed)}/{len(members)} tests passed")
        tests.append(
            {
                "name": f"{package}: {key}",
                "score": _points(len(members) - len(failed), unit),
                "max_score": _points(len(members), unit),
                "status": "failed" if failed else "passed",
                "output": "\n".join(lines)[:GRADESCOPE_OUTPUT_LIMIT],
                "visibility": chosen.get(key, chosen.get(package, "visible")),
            }
        )
    score = _points(passed, unit)
    total = f"total: {passed}/{ran} contract tests passed"
    if points is not None:
        total += f", {round(score, 2):g}/{points:g} points"
    candidates = ", ".join(f"{name}={spec}" for name, spec in swapped.items())
    notes = [f"not graded: {problem}"] if not_graded else []  # the cause first
    notes += [total, f"graded modules: {candidates or 'the references only'}"]
    if not_rerun:
        notes.append("reference, not re-run (cannot see the candidate): " + ", ".join(not_rerun))
    if problem and not not_graded:
        notes.append(f"candidate error: {problem}")
    payload: dict[str, object] = {"score": score}
    if seconds is not None:
        payload["execution_time"] = max(0, round(seconds))  # whole seconds, as documented
    payload |= {
        "output": "\n".join(notes),
        "visibility": "visible",
        "stdout_visibility": "visible",
        "tests": tests,
    }
    return payload


def _default(variable: str) -> str:

    known = VARIABLES.get(variable)
    return known.default_module if known else ""


def write_gradescope(
    path: Path,
    results: list[TestResult],
    modules: dict[str, str],
    not_rerun: tuple[str, ...] | list[str] = (),
    problem: str = "",
    *,
    points: float | None = None,
    visibility: dict[str, str] | None = None,
    seconds: float | None = None,
    not_graded: bool = False,
) -> None:
    payload = gradescope_payload(
        results,
        modules,
        not_rerun,
        problem,
        points=points,
        visibility=visibility,
        seconds=seconds,
        not_graded=not_graded,
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, indent=1) + "\n", encoding="utf-8")
