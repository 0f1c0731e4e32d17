"""Where a failure is repaired: the drill a started drill repairs for (the link to the
active attempt's last failed check that routes to it), the first drill that owns an
attempt's last failure, and a transfer case's canonical owner. Prints nothing."""

from __future__ import annotations

from .errors import RefusedError
from .stages import Mechanism, unit_named
from .store import Attempt, Store


def repair_link(store: Store, unit: Mechanism) -> tuple[int, int] | None:
    """(attempt, check) when a drill is started as the repair an active attempt's last
    failed check routes to, else None."""
    from .grader import repair_drills

    if unit.drill is None:
        return None
    for attempt in sorted(store.active(), key=lambda a: a.started_at, reverse=True):
        if attempt.mechanism == unit.package:
            continue
        checks = store.checks(attempt.id)
        last = checks[-1] if checks else None
        if (
            last
            and last.failed_owner
            and unit.package in repair_drills(last.failed_owner, attempt.mechanism)
        ):
            return attempt.id, last.id
    return None


def repair_plan(store: Store, attempt: Attempt, unit: Mechanism) -> tuple[str, tuple[int, int]]:
    """The first drill that owns `attempt`'s last failure (its unit: `unit`), and the
    (attempt, check) link a repair started there records."""
    from gptlab_testkit import no_owning_drill

    from .grader import related_drills, repair_drills

    checks = store.checks(attempt.id)
    last = checks[-1] if checks else None
    if last is None or last.outcome != "failed" or not last.failed_owner:
        raise RefusedError(
            f"{attempt.mechanism} attempt {attempt.number}: its last check did not fail with"
            " a routed owner; nothing to repair (`check` first)"
        )
    drills = repair_drills(last.failed_owner, attempt.mechanism) or owner_drill(unit)
    if not drills:
        where = f"{attempt.mechanism} stage {last.stage}"
        related = related_drills(last.failed_owner)
        raise RefusedError(
            f"{last.failed_owner}: {no_owning_drill(where, related)}"
            if related
            else f"no drill owns {last.failed_owner}: repair it in {where} itself"
        )
    return drills[0], (attempt.id, last.id)


def owner_drill(unit: Mechanism) -> tuple[str, ...]:
    """A transfer case's canonical owner, where it is a drill: the kit repairs a failed
    case there (a model build owner is started by name, not as a repair)."""
    case = unit.drill
    owner = unit_named(case.owner) if case and case.id.startswith("PT") and case.owner else None
    return (owner.package,) if owner is not None and owner.drill is not None else ()
