"""What `diagnose` says: the baseline's items with what the machine saw, the explain-aloud
items with their anchors, the five scores and the route they pick."""

from __future__ import annotations

from datetime import date, timedelta

from .gates import Gate
from .items import label
from .messages import when_due
from .plan import DAILY_LOOP, PlanItem, day_of, route_length
from .route import DIMENSIONS, GRADED, SELF_SCORED
from .route_desk import Diagnostic, Today
from .store import RouteRecord


def diagnosis(state: Diagnostic) -> list[str]:
    lines = ["baseline diagnostic (blank editor, docs for signatures only):"]
    for item, seen in zip(GRADED, state.evidence, strict=True):
        lines.append(
            f"  {item.drill} {item.minutes}m -> {item.dimension}: {seen.score}/3 ({seen.seen})"
        )
    for self_item in SELF_SCORED:
        score = state.self_scores.get(self_item.key)
        shown = f"{score}/3 (your score)" if score is not None else "not scored yet"
        lines.append(f"  {self_item.key} {self_item.minutes}m -> {self_item.dimension}: {shown}")
        lines.append(f"    {self_item.title}; score yourself: --self {self_item.key}=N")
        lines += [f"      {n}: {text}" for n, text in enumerate(self_item.anchors)]
    route = state.route
    if route is None:
        scores = state.scores()
        known = sum(scores.values())
        lines.append(
            f"so far {known}/15 over {len(scores)} of {len(DIMENSIONS)} dimensions;"
            " `diagnose --finish` scores it and fixes the route (once, for good)"
        )
        return lines
    total = sum(score for _, score in route.scores)
    what = "recorded" if state.just_recorded else f"fixed on {route.day}"
    lines.append(f"route {what}: {route.route} (total {total}/15)")
    lines.append("  scores: " + ", ".join(f"{dim} {score}" for dim, score in route.scores))
    protected = ", ".join(route.protected) if route.protected else "none (no zero)"
    lines.append(f"  protected days: {protected}")
    lines.append(f"  M03 branch (frozen from P19 at its deadline): {route.m03_branch}")
    return lines


def _item_line(item: PlanItem, done: frozenset[str]) -> str:
    stretch = "stretch " if item.stretch else ""
    if item.item is None:
        return f"{stretch}{item.name}: not graded by this project (self-scored)"
    mark = " [done today]" if item.item in done else ""
    named = label(item.item) if item.item != item.name else item.name
    return f"{stretch}{named}: graded, `start {item.name}`{mark}"


def today(state: Today) -> list[str]:
    """Today's blocks: repairs and due re-solves first in the implement block (an unresolved
    owner comes before new work), then the day's items, graded or self-scored."""
    route = state.route
    where = f"day {state.number} of the {route.route} route (day 1: {route.day})"
    if state.day is None:
        where += f": past its {state.length} days"
    elif state.day.protected:
        where += ": protected (a zero in the diagnostic keeps this day's block whole)"
    lines = [where]
    for minutes, block, what in DAILY_LOOP:
        if block != "implement":
            scored = "" if block in ("test/profile", "log") else " (self-scored)"
            lines.append(f"  {minutes}m {block}: {what}{scored}")
            continue
        lines.append(f"  {minutes}m {block}:")
        for attempt, drill in state.repairs:
            lines.append(
                f"    repair first: {drill} owns {attempt.mechanism} attempt {attempt.number}'s"
                f" failure (`repair`, or `start {drill}`)"
            )
        for review in state.due:
            lines.append(
                f"    re-solve due: {label(review.item)} ({when_due(review.step)}),"
                f" `start {review.item}`"
            )
        if state.day is not None:
            lines += [f"    {_item_line(item, state.done)}" for item in state.day.items]
        else:
            lines.append("    clean re-solves and unseen mock-eligible cases (`due`, `status`)")
    if state.day is not None and state.day.exit:
        lines.append(f"  exit: {state.day.exit}")
    return lines


def plan(route: RouteRecord, today_number: int, finished: dict[str, frozenset[str]]) -> list[str]:
    """Every day of the route: its items, what was finished that day, today marked."""
    first = date.fromisoformat(route.day)
    lines = [f"the {route.route} route from {route.day} (M03 branch: {route.m03_branch}):"]
    for number in range(1, route_length(route.route) + 1):
        day = day_of(route.route, number, route.protected, route.m03_branch)
        when = (first + timedelta(days=number - 1)).isoformat()
        names = ", ".join(("+" if i.stretch else "") + i.name for i in day.items)
        done = sorted(finished.get(when, frozenset()))
        marks = [
            "today" if number == today_number else "",
            "protected" if day.protected else "",
            f"done: {', '.join(done)}" if done else ("open" if number < today_number else ""),
        ]
        shown = "; ".join(m for m in marks if m)
        lines.append(f"  d{number:<2} {when}  {names}" + (f"  [{shown}]" if shown else ""))
    return lines


def gate_lines(found: list[Gate], route: str = "14-day") -> list[str]:
    """Each gate met, open or self-scored, with its evidence; the count met first."""
    graded = [g for g in found if g.met is not None]
    met = sum(1 for g in graded if g.met)
    lines = [
        f"readiness gates: {met} of {len(graded)} graded gates met ({len(found)} in all;"
        f" the {route} route's list)"
    ]
    for gate in found:
        mark = {True: "met ", False: "open", None: "self"}[gate.met]
        lines.append(f"  [{mark}] {gate.name}: {gate.evidence}")
    return lines
