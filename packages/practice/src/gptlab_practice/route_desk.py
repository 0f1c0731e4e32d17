"""What the route does to the record: the baseline diagnostic scored and the route fixed
(once), today's day with its repairs and due re-solves. Prints nothing."""

from __future__ import annotations

from dataclasses import dataclass

from .errors import RefusedError
from .plan import Day, day_number, day_of, route_length
from .route import (
    GRADED,
    SELF_SCORED,
    Evidence,
    deadline,
    graded_evidence,
    m03_branch,
    pick_route,
)
from .store import Attempt, Review, RouteRecord
from .workbench import Workbench


@dataclass(frozen=True)
class Diagnostic:
    """Where the baseline stands: each graded item's evidence, the learner's scores, and
    the route once it is recorded."""

    evidence: list[Evidence]
    self_scores: dict[str, int]
    route: RouteRecord | None
    just_recorded: bool = False

    def scores(self) -> dict[str, int]:
        found = {e.item.dimension: e.score for e in self.evidence}
        for item in SELF_SCORED:
            if item.key in self.self_scores:
                found[item.dimension] = self.self_scores[item.key]
        return found


@dataclass(frozen=True)
class Today:
    """Where today falls on the route, and what the record places in it."""

    route: RouteRecord
    number: int  # today's day of the route (may fall before or past it)
    length: int
    day: Day | None  # None: past the route's last day
    repairs: list[tuple[Attempt, str]]  # an open attempt's routed failure and its drill
    due: list[Review]
    done: frozenset[str]  # items with a finished attempt today


class RouteDesk:
    """The route over one workbench's record."""

    def __init__(self, bench: Workbench) -> None:
        self.bench = bench

    def diagnostic(self) -> Diagnostic:
        evidence = []
        for item in GRADED:
            attempts = self.bench.store.attempts(item.drill)
            first = attempts[0] if attempts else None
            stages = self.bench.store.stages(first.id) if first else []
            checks = self.bench.store.checks(first.id) if first else []
            evidence.append(graded_evidence(item, first, stages, checks))
        return Diagnostic(evidence, self.bench.store.self_scores(), self.bench.store.route())

    def score_yourself(self, scores: dict[str, int]) -> None:
        """Record the learner's 0-3 scores of the explain-aloud items (before the route)."""
        fixed = self.bench.store.route()
        if fixed is not None:
            raise RefusedError(f"the route was fixed on {fixed.day}; its scores never change")
        for key, score in scores.items():
            self.bench.store.add_self_score(key, score, self.bench.clock())

    def fix_route(self) -> Diagnostic:
        """Score the five dimensions, pick the route, record it (once, for good)."""
        state = self.diagnostic()
        if state.route is not None:
            raise RefusedError(f"the route was fixed on {state.route.day}; it never changes")
        missing = [i.key for i in SELF_SCORED if i.key not in state.self_scores]
        if missing:
            raise RefusedError(
                "score the explain-aloud items first: "
                + " ".join(f"--self {key}=N" for key in missing)
                + " (0-3; `diagnose` shows the anchors)"
            )
        now = self.bench.clock()
        for item, seen in zip(GRADED, state.evidence, strict=True):
            attempts = self.bench.store.attempts(item.drill)
            if attempts and not seen.passed_by_deadline:
                due = deadline(attempts[0], item.minutes)
                if now < due:
                    raise RefusedError(
                        f"{item.drill}'s {item.minutes}m deadline is {due:%H:%M}: the diagnostic"
                        " is scored once it passes (or the drill does)"
                    )
        scores = state.scores()
        route, protected = pick_route(scores)
        branch = m03_branch(next(e for e in state.evidence if e.item.drill == "P19"))
        record = RouteRecord(
            now, now.date().isoformat(), route, tuple(scores.items()), protected, branch
        )
        self.bench.store.set_route(record)
        return Diagnostic(state.evidence, state.self_scores, record, just_recorded=True)

    def route(self) -> RouteRecord:
        route = self.bench.store.route()
        if route is None:
            raise RefusedError("no route yet: the baseline picks it (`diagnose`)")
        return route

    def today(self, number: int | None = None) -> Today:
        """Today's day of the route (or day `number`), its repairs and due re-solves."""
        from .grader import repair_drills

        route = self.route()
        now = self.bench.clock()
        number = number or day_number(route.day, now.date())
        length = route_length(route.route)
        day = (
            day_of(route.route, number, route.protected, route.m03_branch)
            if 1 <= number <= length
            else None
        )
        repairs = []
        active = self.bench.store.active()
        for attempt in active:
            if any(a.repair_of == attempt.id for a in active):
                continue  # its repair is already in progress
            checks = self.bench.store.checks(attempt.id)
            last = checks[-1] if checks else None
            if last and last.outcome == "failed" and last.failed_owner:
                drills = repair_drills(last.failed_owner, attempt.mechanism)
                drills = drills or self.bench.owner_drill(attempt)
                if drills:
                    repairs.append((attempt, drills[0]))
        due, _ = self.bench.due(now.date().isoformat())
        done = self.finished_by_day().get(now.date().isoformat(), frozenset())
        return Today(route, number, length, day, repairs, due, done)

    def finished_by_day(self) -> dict[str, frozenset[str]]:
        """The items with an attempt finished on each calendar day."""
        days: dict[str, set[str]] = {}
        for attempt in self.bench.store.attempts():
            if attempt.status == "done" and attempt.finished_at is not None:
                days.setdefault(attempt.finished_at.date().isoformat(), set()).add(
                    attempt.mechanism
                )
        return {day: frozenset(items) for day, items in days.items()}
