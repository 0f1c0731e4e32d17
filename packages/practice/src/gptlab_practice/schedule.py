"""The kit's spacing after a miss (the practice README, "The kit's schedule").

A miss on a mechanism or a canonical drill: a clean re-solve later the same day
(after an unrelated task), another the next day, a retention check three days later
and a final one a week later. A missed transfer (PT) case: re-solve its canonical
owner once, then a *different* PT case three days later, never the same prompt.
"""

from __future__ import annotations

from datetime import date, timedelta

from gptlab_drills.catalogue import DRILLS, Drill

from .stages import DrillItem, Mechanism, unit_named
from .store import PlannedReview

STEPS = (("same day", 0), ("next day", 1), ("3 days", 3), ("a week", 7))
TRANSFER_DELAY_DAYS = 3


def is_transfer_case(drill: DrillItem | None) -> bool:
    return drill is not None and drill.id.startswith("PT")


def sibling(drill: Drill) -> Drill | None:
    """Another PT case for the transfer check: one with the same owner first, else the next
    one in the catalogue's order (wrapping), never the case that was missed."""
    others = [d for d in DRILLS.values() if is_transfer_case(d) and d.id != drill.id]
    same_owner = [d for d in others if d.owner == drill.owner]
    if same_owner:
        return same_owner[0]
    after = [d for d in others if d.id > drill.id] or others
    return after[0] if after else None


def after_miss(unit: Mechanism, day: date) -> tuple[PlannedReview, ...]:
    """The re-solves a miss on `unit` on `day` schedules."""
    if is_transfer_case(unit.drill):
        assert unit.drill is not None
        planned = []
        owner = unit_named(unit.drill.owner) if unit.drill.owner else None
        if owner is not None:  # a model build by its kit name (PT06's M01 is tinygpt)
            planned.append(PlannedReview(owner.package, "owner re-solve", day.isoformat()))
        other = sibling(unit.drill) if isinstance(unit.drill, Drill) else None
        if other is not None:
            due = day + timedelta(days=TRANSFER_DELAY_DAYS)
            planned.append(
                PlannedReview(other.id, f"transfer (after {unit.drill.id})", due.isoformat())
            )
        return tuple(planned)
    return tuple(
        PlannedReview(unit.package, step, (day + timedelta(days=offset)).isoformat())
        for step, offset in STEPS
    )
