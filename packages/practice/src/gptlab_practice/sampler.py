"""Which transfer (PT) case comes next, by the kit's sampler rules, read from the drill
catalogue (a case's owner, family, contract delta and mock eligibility are data there).

After a failed case the learner repairs its canonical owner, then, three days later, draws
a *different* case of the same family: never one of the last two case ids drawn, never a
case whose contract delta was already drawn, never a case whose owner is unresolved. The
mock's draw reuses the same exclusions. Prints nothing: a draw comes with its reasons.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from gptlab_drills.catalogue import DRILLS, Drill

from .stages import unit_named
from .store import Store

RECENT_IDS = 2  # the kit: exclude the last two PT ids drawn
TRANSFER_STEP = "transfer (after "  # a sibling's review step: `transfer (after PT01): why`


def is_transfer_step(step: str) -> bool:
    return step.startswith(TRANSFER_STEP)


def transfer_step(missed: str, why: str) -> str:
    """The review step that names the missed case and why this sibling was drawn."""
    return f"{TRANSFER_STEP}{missed}): {why}"


def transfer_parts(step: str) -> tuple[str, str]:
    """(missed case, why) of a transfer step; why is "" in a record that kept none."""
    head, _, why = step.partition("): ")
    return head.removeprefix(TRANSFER_STEP).rstrip(")"), why


def transfer_cases() -> list[Drill]:
    """Every PT case of the catalogue, in its order (cases land there as they are built)."""
    return [d for d in DRILLS.values() if d.id.startswith("PT")]


def owner_item(owner: str) -> str:
    """The store's key for a case's owner: a drill's id, a model build's package (M01 is
    tinygpt); an owner practice does not grade keeps its kit name."""
    unit = unit_named(owner) if owner else None
    return unit.package if unit is not None else owner


@dataclass(frozen=True)
class DrawHistory:
    """What earlier draws rule out: the PT ids drawn (oldest first), the contract deltas
    already drawn, and the items (owners) with a miss not yet re-solved clean."""

    drawn: tuple[str, ...] = ()
    unresolved: frozenset[str] = frozenset()

    @property
    def recent(self) -> tuple[str, ...]:
        return self.drawn[-RECENT_IDS:]

    def deltas(self) -> frozenset[str]:
        return frozenset(DRILLS[i].delta for i in self.drawn if i in DRILLS and DRILLS[i].delta)


@dataclass(frozen=True)
class Draw:
    """A drawn case (None: nothing is left) and why: the pool and what was left out."""

    case: Drill | None
    pool: str  # "same family (layout) as PT01", ...
    left_out: tuple[tuple[str, str], ...] = field(default_factory=tuple)  # (id, why)

    @property
    def why(self) -> str:
        grouped: dict[str, list[str]] = {}
        for case_id, reason in self.left_out:
            grouped.setdefault(reason, []).append(case_id)
        parts = [f"{', '.join(ids)} ({reason})" for reason, ids in grouped.items()]
        left = f"; left out {'; '.join(parts)}" if parts else ""
        return f"{self.pool}{left}"


def exclusion(case: Drill, history: DrawHistory, waiving: str = "") -> str:
    """Why `case` may not be drawn now ("" when it may). `waiving`: an owner whose repair
    is already scheduled before the draw (a failed case's own owner)."""
    if case.id in history.recent:
        return f"one of the last {RECENT_IDS} drawn"
    if case.delta and case.delta in history.deltas():
        return "its contract delta was drawn already"
    owner = owner_item(case.owner)
    if owner in history.unresolved and owner != waiving:
        return f"owner {case.owner} unresolved"
    return ""


def sibling(missed: Drill, history: DrawHistory) -> Draw:
    """A different case after a failed `missed`: of its family (a case with no family in
    the catalogue: of its owner, else any), the first in catalogue order that no rule
    excludes. The missed case's own owner is repaired first, so it does not exclude."""
    others = [d for d in transfer_cases() if d.id != missed.id]
    if not others:
        return Draw(None, f"no other case than {missed.id} in the catalogue")
    if missed.family:
        pool = [d for d in others if d.family == missed.family]
        what = f"a different {missed.family} case than {missed.id}"
    else:
        same_owner = [d for d in others if d.owner and d.owner == missed.owner]
        pool = same_owner or others[others.index(_after(others, missed.id)) :] + others
        pool = list(dict.fromkeys(pool))
        what = f"a different case than {missed.id} (it has no family in the catalogue)"
    return _first_allowed(pool, history, what, owner_item(missed.owner), missed.id)


def _after(cases: Sequence[Drill], case_id: str) -> Drill:
    """The first case after `case_id` in catalogue order, wrapping."""
    return next((d for d in cases if d.id > case_id), cases[0])


def _first_allowed(
    pool: Iterable[Drill], history: DrawHistory, what: str, waiving: str, missed: str
) -> Draw:
    left_out: list[tuple[str, str]] = []
    for case in pool:
        reason = exclusion(case, history, waiving)
        if not reason:
            return Draw(case, what, tuple(left_out))
        if case.id != missed:
            left_out.append((case.id, reason))
    return Draw(None, what, tuple(left_out))


def history_of(store: Store) -> DrawHistory:
    """The draws the record holds: PT cases attempted or scheduled as siblings, in order;
    the items whose latest miss has no clean re-solve yet."""
    events: list[tuple[str, str]] = [  # (when, case id)
        (a.started_at.isoformat(), a.mechanism)
        for a in store.attempts()
        if a.mechanism.startswith("PT")
    ]
    reviews = store.reviews()
    events += [
        (store.attempt(r.miss_attempt_id).started_at.isoformat(), r.item)
        for r in reviews
        if r.item.startswith("PT") and r.status == "pending"
    ]
    drawn: list[str] = []
    for _, case_id in sorted(events):
        if case_id in drawn:
            drawn.remove(case_id)
        drawn.append(case_id)
    return DrawHistory(tuple(drawn), unresolved_items(store))


def unresolved_items(store: Store) -> frozenset[str]:
    """Items whose latest miss scheduled re-solves none of which is done yet."""
    latest: dict[str, int] = {}
    for review in store.reviews():
        if review.status != "superseded" and not is_transfer_step(review.step):
            latest[review.item] = max(latest.get(review.item, 0), review.miss_attempt_id)
    unresolved = set()
    for item, miss in latest.items():
        own = [r for r in store.reviews(item) if r.miss_attempt_id == miss]
        own = [r for r in own if not is_transfer_step(r.step)]
        if not any(r.status == "done" for r in own):
            unresolved.add(item)
    return frozenset(unresolved)
