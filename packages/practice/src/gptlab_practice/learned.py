"""When an item (a mechanism or a drill) counts as *learned*, as the kit defines it.

The kit's definition (the practice README, "Learned, as the kit defines it"): the
attempt starts from an empty file with no assistant; every tensor dimension is named
before code; aliasing and allocation are stated; the numerical-stability decision is
explicit; time, memory and synchronisation costs are stated; and one clean re-solve
passes on a later day.

What the tool checks: an attempt, started by `start` (an empty file; a debug drill's
supplied artifact) on a later calendar day than the item's previous attempt, that
passed every stage within its budget (repair-drill time not counted), with no first
wrong decision, the reference never opened, and the ledger filled at every passing
check. It cannot see *when* the ledger was written, nor whether an assistant helped.
"""

from __future__ import annotations

from dataclasses import dataclass

from .store import Attempt, CheckRecord, StageRecord


@dataclass(frozen=True)
class Verdict:
    learned: bool
    why: str  # the attempt that counts, or the nearest reason none does yet


def over_budget(stages: list[StageRecord]) -> list[int]:
    """Stages that passed after their budget ran out, or never passed."""
    return [s.stage for s in stages if s.seconds is None or s.seconds > s.minutes * 60]


def attempt_counts(
    attempt: Attempt,
    previous: Attempt | None,
    stages: list[StageRecord],
    checks: list[CheckRecord] | None = None,
) -> str | None:
    """None when the attempt shows the item learned, else why it does not."""
    if attempt.status != "done":
        return f"attempt {attempt.number} is {attempt.status}"
    if previous is None:
        return f"attempt {attempt.number} is the first (learned needs a re-solve on a later day)"
    if attempt.day <= previous.day:
        return f"attempt {attempt.number} began on the same day as the one before ({previous.day})"
    if attempt.reference_opened_at is not None:
        return f"the reference was opened during attempt {attempt.number}"
    if attempt.first_wrong_owner is not None:
        return f"attempt {attempt.number} was not clean (first wrong: {attempt.first_wrong_owner})"
    late = over_budget(stages)
    if late:
        return f"attempt {attempt.number} ran over budget in stage " + ", ".join(map(str, late))
    passing = [c for c in checks or [] if c.outcome == "passed"]
    if checks is not None and not all(c.ledger_filled for c in passing):
        return f"attempt {attempt.number} passed with the ledger not filled"
    return None


def verdict(
    attempts: list[Attempt],
    stages: dict[int, list[StageRecord]],
    checks: dict[int, list[CheckRecord]] | None = None,
) -> Verdict:
    """Learned if any attempt counts; otherwise why the latest one does not."""
    if not attempts:
        return Verdict(False, "no attempt yet")
    reasons = []
    for index, attempt in enumerate(attempts):
        previous = attempts[index - 1] if index else None
        found = None if checks is None else checks.get(attempt.id, [])
        reason = attempt_counts(attempt, previous, stages.get(attempt.id, []), found)
        if reason is None:
            return Verdict(True, f"attempt {attempt.number}, {attempt.day}")
        reasons.append(reason)
    return Verdict(False, reasons[-1])
