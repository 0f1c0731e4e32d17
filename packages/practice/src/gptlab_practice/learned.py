"""When a mechanism counts as *learned*, and the stage times that decide it.

Learned (the seed links the definition without spelling it out; this is ours): a
re-solve, that is an attempt started with `start` (an empty file) on a later
calendar day than the mechanism's previous attempt, that passed every stage
within its time budget without the reference having been opened.
"""

from __future__ import annotations

from dataclasses import dataclass

from .store import Attempt, StageRecord


@dataclass(frozen=True)
class Verdict:
    learned: bool
    why: str  # the attempt that counts, or the nearest reason none does yet


def over_budget(stages: list[StageRecord]) -> list[int]:
    """Stages that passed after their budget ran out, or never passed."""
    return [s.stage for s in stages if s.seconds is None or s.seconds > s.minutes * 60]


def attempt_counts(
    attempt: Attempt, previous: Attempt | None, stages: list[StageRecord]
) -> str | None:
    """None when the attempt shows the mechanism learned, else why it does not."""
    if attempt.status != "done":
        return f"attempt {attempt.number} is {attempt.status}"
    if previous is None:
        return f"attempt {attempt.number} is the first (learned needs a re-solve on a later day)"
    if attempt.day <= previous.day:
        return f"attempt {attempt.number} began on the same day as the one before ({previous.day})"
    if attempt.reference_opened_at is not None:
        return f"the reference was opened during attempt {attempt.number}"
    late = over_budget(stages)
    if late:
        return f"attempt {attempt.number} ran over budget in stage " + ", ".join(map(str, late))
    return None


def verdict(attempts: list[Attempt], stages: dict[int, list[StageRecord]]) -> Verdict:
    """Learned if any attempt counts; otherwise why the latest one does not."""
    if not attempts:
        return Verdict(False, "no attempt yet")
    reasons = []
    for index, attempt in enumerate(attempts):
        previous = attempts[index - 1] if index else None
        reason = attempt_counts(attempt, previous, stages.get(attempt.id, []))
        if reason is None:
            return Verdict(True, f"attempt {attempt.number}, {attempt.day}")
        reasons.append(reason)
    return Verdict(False, reasons[-1])
