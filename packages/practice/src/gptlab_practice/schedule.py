"""The kit's spacing after a miss (the practice README, "The kit's schedule").

A miss on a mechanism or a canonical drill: a clean re-solve later the same day
(after an unrelated task), another the next day, a retention check three days later
and a final one a week later. A missed transfer (PT) case: re-solve its canonical
owner the same day, then a *different* case of its family three days later, drawn by the
kit's sampler rules (`sampler.sibling`): never the same prompt, nor one of the last two
drawn, nor a delta already drawn, nor a case whose owner is unresolved.
"""

from __future__ import annotations

from datetime import date, timedelta

from gptlab_drills.catalogue import DRILLS

from .sampler import DrawHistory, sibling, transfer_step
from .stages import DrillItem, Mechanism, unit_named
from .store import PlannedReview

STEPS = (("same day", 0), ("next day", 1), ("3 days", 3), ("a week", 7))
TRANSFER_DELAY_DAYS = 3


def is_transfer_case(drill: DrillItem | None) -> bool:
    return drill is not None and drill.id.startswith("PT")


def after_miss(
    unit: Mechanism, day: date, history: DrawHistory | None = None
) -> tuple[PlannedReview, ...]:
    """The re-solves a miss on `unit` on `day` schedules; `history`: the earlier draws a
    transfer case's sibling must avoid (none given: only the missed case is avoided)."""
    if is_transfer_case(unit.drill):
        assert unit.drill is not None
        planned = []
        owner = unit_named(unit.drill.owner) if unit.drill.owner else None
        if owner is not None:  # a model build by its kit name (PT06's M01 is tinygpt)
            planned.append(PlannedReview(owner.package, "owner re-solve", day.isoformat()))
        missed = DRILLS.get(unit.drill.id)
        draw = sibling(missed, history or DrawHistory()) if missed is not None else None
        if draw is not None and draw.case is not None:
            due = day + timedelta(days=TRANSFER_DELAY_DAYS)
            step = transfer_step(unit.drill.id, draw.why)
            planned.append(PlannedReview(draw.case.id, step, due.isoformat()))
        return tuple(planned)
    return tuple(
        PlannedReview(unit.package, step, (day + timedelta(days=offset)).isoformat())
        for step, offset in STEPS
    )
