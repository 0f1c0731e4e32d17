"""What one graded test is: where it lives, which tier and owner it has, how it ended."""

from __future__ import annotations

import hmac
import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal

Outcome = Literal["passed", "failed", "skipped"]
TIERS = ("tier0", "tier1", "tier2", "tier3")
# The reason of a selected test the run ended before reaching (-x, --maxfail, a stop rule):
# it is reported as skipped, never as passed.
NOT_RUN = "not run: the run stopped before this test"


@dataclass
class TestResult:
    nodeid: str
    package: str
    owner: str
    kind: Literal["contract", "extension"]
    tiers: tuple[str, ...]
    outcome: Outcome = "passed"
    duration: float = 0.0  # seconds: setup + call + teardown
    reason: str = ""  # one line: why it failed or was skipped
    variables: tuple[str, ...] = ()  # the implementation variables the test exercises
    clauses: tuple[str, ...] = ()  # the numbered contract clauses the test checks (P05.3)
    # The failure's exception class: "AssertionError" (or pytest's "Failed") when the test's
    # own check failed, another name when an exception escaped from the code under test.
    error: str = ""
    # The scoring policy (`scoring`): a rejection test (a `rejection` mark, or every clause
    # it names of kind rejection); a passed rejection test held back (outcome "failed",
    # not earned) because valid-input tests beside it failed; and, in a judged run, the
    # worker-reported facts its outcome rested on (advisory: shown, never scored).
    rejection: bool = False
    held: bool = False
    advisory: str = ""

    __test__ = False  # not a pytest test class


def package_of(path: Path) -> str:
    """`packages/<name>/tests/...` -> name; `integration_tests/...` -> integration;
    a drill's suite `packages/drills/tests/<id>/...` -> its id (one scorecard row per drill)."""
    parts = path.parts
    if "integration_tests" in parts:
        return "integration"
    if "packages" in parts:
        index = len(parts) - 1 - parts[::-1].index("packages")
        if parts[index + 1 : index + 3] == ("drills", "tests") and index + 4 < len(parts):
            return parts[index + 3]
        if index + 1 < len(parts):
            return parts[index + 1]
    return path.parent.name


def records_payload(results: list[TestResult]) -> list[dict[str, object]]:
    return [asdict(result) for result in results]


def results_from(rows: list[dict[str, object]]) -> list[TestResult]:
    return [
        TestResult(
            **{  # type: ignore[arg-type]
                **row,
                "tiers": tuple(row["tiers"]),  # type: ignore[arg-type]
                "variables": tuple(row["variables"]),  # type: ignore[arg-type]
                "clauses": tuple(row.get("clauses", ())),  # type: ignore[arg-type]
            }
        )
        for row in rows
    ]


class ReportNotAuthenticError(ValueError):
    """A keyed report whose HMAC does not hold (or is missing): not the judge's report."""


def _mac_path(path: Path) -> Path:
    return path.with_name(path.name + ".hmac")


def write_report(
    path: Path,
    results: list[TestResult],
    header: dict[str, str],
    *,
    key: bytes | None = None,
    **summary: object,
) -> None:
    """`key`: also write PATH.hmac, the report's HMAC-SHA256 (grade's run checks it)."""
    payload = {"modules": header, **summary, "tests": records_payload(results)}
    data = json.dumps(payload, indent=1).encode("utf-8")
    path.write_bytes(data)
    if key is not None:
        _mac_path(path).write_text(hmac.new(key, data, "sha256").hexdigest(), encoding="ascii")


def read_report(path: Path, *, key: bytes | None = None) -> tuple[dict[str, str], list[TestResult]]:
    """`key`: the report is read only if PATH.hmac holds its HMAC under that key (read
    once: the bytes checked are the bytes parsed); else ReportNotAuthenticError."""
    data = path.read_bytes()
    if key is not None:
        try:
            mac = _mac_path(path).read_text(encoding="ascii").strip()
        except (OSError, UnicodeDecodeError):
            mac = ""
        if not hmac.compare_digest(mac, hmac.new(key, data, "sha256").hexdigest()):
            raise ReportNotAuthenticError(f"{path}: its HMAC does not hold")
    payload = json.loads(data.decode("utf-8"))
    return payload["modules"], results_from(payload["tests"])


# -- Gradescope's autograder format (results.json)

GRADESCOPE_OUTPUT_LIMIT = 8000  # characters of one test's output
# Gradescope's visibility values: when a student sees a test (or the whole result).
VISIBILITIES = ("visible", "hidden", "after_due_date", "after_published")


def gradescope_keys() -> set[str]:
    """What `--gradescope-visibility` may name: an owner key or a package tests live in."""
    from .candidates import VARIABLE_BY_PACKAGE
    from .owners import OWNERS

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
    from .scoring import scored  # (scoring reads this module's TestResult)

    groups: dict[tuple[str, str], list[TestResult]] = {}
    for result in scored(results):
        if result.outcome != "skipped" and result.kind == "contract":
            groups.setdefault((result.package, result.owner), []).append(result)
    return dict(sorted(groups.items()))


def _points(count: int, unit: float) -> float | int:
    # 6 decimals: the rows still add up to the assignment's points within 1e-4 (4 did not)
    return count if unit == 1 else round(count * unit, 6)


def gradescope_payload(
    results: list[TestResult],
    modules: dict[str, str],
    not_rerun: tuple[str, ...] | list[str] = (),
    problem: str = "",
    *,
    points: float | None = None,
    visibility: dict[str, str] | None = None,
) -> dict[str, object]:
    """Gradescope's results.json: one Gradescope test per owner (a routing key) per package.

    An owner's max_score is the number of its graded (contract) tests that ran, its score
    the number that passed, and its output the mechanism, the repair target and each
    failed test with its one-line reason. One row per owner keeps the page readable
    (a candidate sees ~10 mechanisms, not ~100 test ids) and says what to fix.

    `points` scales every score so the maximum is the assignment's points; `visibility`
    maps an owner key or a package to Gradescope's visibility (an owner key wins).
    """
    from .owners import OWNERS  # routing.toml, read once

    groups = _owner_rows(results)
    ran = sum(len(members) for members in groups.values())
    passed = sum(r.outcome != "failed" for members in groups.values() for r in members)
    unit = points / ran if points is not None and ran else 1.0
    chosen = visibility or {}
    tests: list[dict[str, object]] = []
    for (package, key), members in groups.items():
        failed = [r for r in members if r.outcome == "failed"]
        owner = OWNERS.get(key)
        lines = [f"{owner.mechanism}" if owner else key]
        if failed and owner:
            lines.append(f"repair: {owner.repair}")
        lines += [f"- {r.nodeid}: {r.reason}" if r.reason else f"- {r.nodeid}" for r in failed]
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
    candidates = ", ".join(
        f"{name}={spec}" for name, spec in modules.items() if spec != _default(name)
    )
    notes = [total, f"graded modules: {candidates or 'the references only'}"]
    if not_rerun:
        notes.append("reference, not re-run (cannot see the candidate): " + ", ".join(not_rerun))
    if problem:
        notes.append(f"candidate error: {problem}")
    return {
        "score": score,
        "output": "\n".join(notes),
        "visibility": "visible",
        "stdout_visibility": "visible",
        "tests": tests,
    }


def _default(variable: str) -> str:
    from .candidates import VARIABLES

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
) -> None:
    payload = gradescope_payload(
        results, modules, not_rerun, problem, points=points, visibility=visibility
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, indent=1) + "\n", encoding="utf-8")
