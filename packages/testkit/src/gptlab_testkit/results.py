"""What one graded test is: where it lives, which tier and owner it has, how it ended."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal

Outcome = Literal["passed", "failed", "skipped"]
TIERS = ("tier0", "tier1", "tier2", "tier3")


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

    __test__ = False  # not a pytest test class


def package_of(path: Path) -> str:
    """`packages/<name>/tests/...` -> name; `integration_tests/...` -> integration."""
    parts = path.parts
    if "integration_tests" in parts:
        return "integration"
    if "packages" in parts:
        index = len(parts) - 1 - parts[::-1].index("packages")
        if index + 1 < len(parts):
            return parts[index + 1]
    return path.parent.name


def records_payload(results: list[TestResult]) -> list[dict[str, object]]:
    return [asdict(result) for result in results]


def results_from(rows: list[dict[str, object]]) -> list[TestResult]:
    return [
        TestResult(**{**row, "tiers": tuple(row["tiers"]), "variables": tuple(row["variables"])})  # type: ignore[arg-type]
        for row in rows
    ]


def write_report(
    path: Path, results: list[TestResult], header: dict[str, str], **summary: object
) -> None:
    payload = {"modules": header, **summary, "tests": records_payload(results)}
    path.write_text(json.dumps(payload, indent=1), encoding="utf-8")


def read_report(path: Path) -> tuple[dict[str, str], list[TestResult]]:
    payload = json.loads(path.read_text(encoding="utf-8"))
    return payload["modules"], results_from(payload["tests"])
