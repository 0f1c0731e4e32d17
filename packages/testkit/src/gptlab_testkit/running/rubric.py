"""The model-build rubric where a machine can see it: per build, per dimension, the evidence.

The kit scores a model build on seven dimensions, 0-4 each (ready at 24/28 with none below
2). A machine cannot give those scores; it can show what its tests saw. Each owner of a
build's tests names the dimension its invariant belongs to (`rubric` in routing.toml), so a
graded run splits into: per dimension, the contract tests passed of those run, and the
owners that failed. A dimension no test sees (inference reasoning) is left to the
learner's own score, and says so. No score is invented here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gptlab_testkit.candidates import VARIABLE_BY_PACKAGE, is_reference
from gptlab_testkit.running.owners import OWNERS
from gptlab_testkit.running.results import TestResult
from gptlab_testkit.running.scoring import is_advisory, scored

DIMENSIONS = (
    "contract & config",
    "module & state ownership",
    "tensor mechanics",
    "numerical correctness",
    "complete forward path",
    "tests & serialization",
    "inference reasoning",
)
# The model builds this project grades, by package, with the kit's names.
BUILDS = {
    "tinygpt": "M01",
    "modern_lm": "M02",
    "cache_aware_lm": "M03",
    "runtime_lm": "M04",
    "moe_lm": "M05",
    "fragment_lm": "M10",
}
YOUR_SCORE = "no test sees it: your own score (0-4)"


@dataclass(frozen=True)
class Evidence:
    """What one build's graded run shows about one rubric dimension."""

    build: str  # "M01"
    dimension: str
    passed: int
    run: int
    failed_owners: tuple[str, ...]

    @property
    def summary(self) -> str:
        if not self.run:
            return YOUR_SCORE
        failed = f"; failed: {', '.join(self.failed_owners)}" if self.failed_owners else ""
        return f"{self.passed}/{self.run} contract tests passed{failed}"


def dimension_of(owner: str) -> str | None:
    entry = OWNERS.get(owner)
    return entry.rubric if entry is not None else None


# M03's advanced branch is graded by cache_aware_lm's suite: its results carry that package.
ALSO_GRADED_BY = {"cache_aware_lm": ("CACHE_AWARE_MODERN_MODULE",)}


def _build_variables(package: str) -> tuple[str, ...]:
    own = VARIABLE_BY_PACKAGE.get(package)
    return ((own.name,) if own is not None else ()) + ALSO_GRADED_BY.get(package, ())


def swapped_packages() -> list[str]:
    """The builds graded as a candidate in this run (a reference's run shows no rubric)."""
    return [
        package
        for package in BUILDS
        if any(not is_reference(name) for name in _build_variables(package))
    ]


def evidence(results: Sequence[TestResult], packages: Sequence[str]) -> list[Evidence]:
    """Each dimension of each build among `packages` that has graded results, in order."""
    judged = [
        r
        for r in scored(results)
        if r.kind == "contract" and not is_advisory(r) and r.outcome != "skipped"
    ]
    rows = []
    for package, build in BUILDS.items():
        own = [r for r in judged if r.package == package]
        if package not in packages or not own:
            continue
        for dimension in DIMENSIONS:
            seen = [r for r in own if dimension_of(r.owner) == dimension]
            passed = sum(r.outcome == "passed" for r in seen)
            failed = sorted({r.owner for r in seen if r.outcome == "failed"})
            rows.append(Evidence(build, dimension, passed, len(seen), tuple(failed)))
    return rows


def evidence_lines(rows: Sequence[Evidence]) -> list[str]:
    """The rubric block grade prints under a build's scorecard."""
    lines: list[str] = []
    for build in dict.fromkeys(row.build for row in rows):
        package = next(name for name, kit in BUILDS.items() if kit == build)
        lines += ["", f"model-build rubric, {build} ({package}): what the tests saw, per dimension"]
        lines += [f"  {row.dimension:<26} {row.summary}" for row in rows if row.build == build]
        lines.append("  the scores (0-4 each, ready at 24/28 with none below 2) are yours to give")
    return lines


def evidence_payload(rows: Sequence[Evidence]) -> list[dict[str, object]]:
    """The same rows for --json."""
    return [
        {
            "build": row.build,
            "dimension": row.dimension,
            "passed": row.passed,
            "run": row.run,
            "failed_owners": list(row.failed_owners),
        }
        for row in rows
    ]


__all__ = [
    "BUILDS",
    "DIMENSIONS",
    "Evidence",
    "evidence",
    "evidence_lines",
    "evidence_payload",
    "swapped_packages",
]
