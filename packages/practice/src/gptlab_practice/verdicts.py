"""A check's verdict per stage, read from one grader run of the last stage's tests."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .stages import Mechanism

if TYPE_CHECKING:  # the grader imports torch: only a check pays for it
    from gptlab_testkit import TestResult

    from .grader import StageRun


@dataclass(frozen=True)
class StageVerdict:
    """One stage's result within a check."""

    stage: int
    passed: bool
    tests_passed: int
    failed: list[TestResult]  # in collection order; the first names the owner
    reason: str  # why nothing could be graded, or the first failure's one line
    broken: tuple[str, ...] = ()  # the clauses its failures break (`broken_clauses`)

    @property
    def owner(self) -> str | None:
        return self.failed[0].owner if self.failed else None

    def row(self) -> tuple[int, str, int, int, str | None, str]:
        outcome = "passed" if self.passed else "failed"
        return (self.stage, outcome, self.tests_passed, len(self.failed), self.owner, self.reason)


def stage_verdicts(
    mechanism: Mechanism, run: StageRun, first: int, last: int
) -> list[StageVerdict]:
    """Stages first..last in order, from one run of the last one's tests; stop at a failure."""
    from gptlab_testkit import broken_clauses

    from .grader import identity

    verdicts = []
    for number in range(first, last + 1):
        tests = [r for r in run.results if mechanism.selects(number, identity(r))]
        held = [r for r in tests if _held(r)]
        failed = [r for r in tests if r.outcome == "failed" and not _held(r)]
        if run.problem or not tests:
            reason = run.problem or "no contract test is selected by this stage"
            verdicts.append(StageVerdict(number, False, 0, [], reason))
            break
        reason = failed[0].reason if failed else ""
        passed = len(tests) - len(failed) - (len(held) if failed else 0)
        broken = tuple(broken_clauses(failed, tests))
        verdicts.append(StageVerdict(number, not failed, passed, failed, reason, broken))
        if failed:
            break
    return verdicts


def _held(result: TestResult) -> bool:
    """A passed rejection test the grader's scoring policy held back (not earned) because a
    valid-input test beside it failed. It is no failure of the attempt's (never routed, never
    a broken clause). A run of several stages (`--all`, `watch`) holds it for a later stage's
    failure too; a check of its own stage would have earned it, so with no failure of this
    stage's own it counts as passed here, and beside one it is neither passed nor failed."""
    return bool(
        getattr(result, "held", False)
    )  # the policy's field (gptlab_testkit.running.scoring)
