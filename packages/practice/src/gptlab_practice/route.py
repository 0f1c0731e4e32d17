"""The baseline diagnostic and the route it picks, by the kit's thresholds.

The baseline (blank editor, docs for signatures only): P03 in 20 minutes, P11 in 35, P19 in
45, graded; then two explain-aloud items the learner scores against anchors (a machine
cannot hear an explanation). Five dimensions, each 0-3, total /15:

- tensor semantics <- P03; numerical correctness <- P11; model & attention mechanics <- P19
  (each: 3 passed by its deadline with no first wrong decision, 2 passed by its deadline
  after one, 1 some tests passing at a check by its deadline, 0 none or not attempted);
- cache & runtime ownership <- the learner's score of the KV bytes/token item;
- communication under pressure <- the learner's score of the request-path drawing.

Routing: 0-7 the full 14 days; 8-11, or 12-15 with any zero, the intermediate route (days
1-10 and 12-14); 12-15 with no zero the 7-day route. A zero protects its block. P19 frozen
at its 45-minute deadline fixes M03's branch (passed: advanced, else the simple tiers); the
route, once recorded, never changes. Prints nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the command line reads this module's data before anything else loads
    from .store import Attempt, CheckRecord, StageRecord


@dataclass(frozen=True)
class GradedItem:
    drill: str
    minutes: int
    dimension: str


@dataclass(frozen=True)
class SelfItem:
    key: str
    minutes: int
    title: str
    dimension: str
    anchors: tuple[str, str, str, str]  # what 0, 1, 2 and 3 mean


GRADED = (
    GradedItem("P03", 20, "tensor semantics"),
    GradedItem("P11", 35, "numerical correctness"),
    GradedItem("P19", 45, "model & attention mechanics"),
)
SELF_SCORED = (
    SelfItem(
        "kv_capacity",
        25,
        "KV bytes per token and the largest cache-bound concurrency, aloud",
        "cache & runtime ownership",
        (
            "no formula",
            "a formula missing a factor (layers, K and V, KV heads, bytes per element)",
            "bytes per token right; concurrency without reserving weights and activations",
            "both right, the memory budget and its reserve stated",
        ),
    ),
    SelfItem(
        "request_path",
        25,
        "a serving engine's request path, drawn and explained",
        "communication under pressure",
        (
            "no drawing",
            "components named, no flow between them",
            "the flow end to end with one gap (who owns the KV blocks, or detokenisation)",
            "end to end, each state's owner named, while explaining aloud",
        ),
    ),
)
DIMENSIONS = tuple(i.dimension for i in GRADED) + tuple(i.dimension for i in SELF_SCORED)
PROTECTS = {  # a zero in this dimension protects these days of the route
    "tensor semantics": ("d1",),
    "numerical correctness": ("d2",),
    "model & attention mechanics": ("d3", "d4"),
    "cache & runtime ownership": ("d5", "d6", "d7", "d8"),
    "communication under pressure": ("d12", "d13"),
}
FULL, INTERMEDIATE, SEVEN_DAY = "14-day", "intermediate", "7-day"


@dataclass(frozen=True)
class Evidence:
    """A graded item's score and what the machine saw."""

    item: GradedItem
    score: int
    seen: str
    passed_by_deadline: bool


def deadline(attempt: Attempt, minutes: int) -> datetime:
    return attempt.started_at + timedelta(minutes=minutes)


def graded_evidence(
    item: GradedItem,
    attempt: Attempt | None,
    stages: list[StageRecord],
    checks: list[CheckRecord],
) -> Evidence:
    """The item's score from its first attempt, frozen at the baseline's deadline: only
    checks made by then count (an edit or a pass afterwards changes nothing)."""
    if attempt is None:
        return Evidence(item, 0, f"not attempted (`start {item.drill}`)", False)
    due = deadline(attempt, item.minutes)
    by_deadline = [c for c in checks if c.at <= due and c.outcome in ("passed", "failed")]
    passed = any(c.outcome == "passed" for c in by_deadline)
    when = f"{item.minutes}m deadline {due:%H:%M}"
    if passed:
        clean = attempt.first_wrong_owner is None
        score = 3 if clean else 2
        wrong = "" if clean else f", first wrong decision {attempt.first_wrong_owner}"
        return Evidence(item, score, f"passed by its {when}{wrong}", True)
    best = max((c.tests_passed for c in by_deadline), default=0)
    if best:
        return Evidence(item, 1, f"{best} tests passing by its {when}, not all", False)
    seen = "no check" if not by_deadline else "no test passing"
    return Evidence(item, 0, f"{seen} by its {when}", False)


def pick_route(scores: dict[str, int]) -> tuple[str, tuple[str, ...]]:
    """The route by the kit's thresholds and the days its zeros protect."""
    total = sum(scores.values())
    zero = any(v == 0 for v in scores.values())
    if total <= 7:
        route = FULL
    elif total <= 11 or zero:
        route = INTERMEDIATE
    else:
        route = SEVEN_DAY
    protected = tuple(day for dim in DIMENSIONS if scores.get(dim) == 0 for day in PROTECTS[dim])
    return route, protected


def m03_branch(p19: Evidence) -> str:
    """P19 at its deadline fixes M03's branch, before day 5, for good."""
    return "advanced" if p19.passed_by_deadline else "simple"


def self_item(key: str) -> SelfItem | None:
    return next((i for i in SELF_SCORED if i.key == key), None)
