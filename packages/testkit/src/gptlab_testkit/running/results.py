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
    a drill's or a kernel's suite `packages/{drills,kernels}/tests/<id>/...` -> its id (one
    scorecard row per item)."""
    parts = path.parts
    if "integration_tests" in parts:
        return "integration"
    if "packages" in parts:
        index = len(parts) - 1 - parts[::-1].index("packages")
        lane = parts[index + 1 : index + 2] in (("drills",), ("kernels",))  # a row per item
        if lane and parts[index + 2 : index + 3] == ("tests",) and index + 4 < len(parts):
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
    path.parent.mkdir(parents=True, exist_ok=True)
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
