"""The route's days and their blocks (the kit's study route), and which of their items this
project grades. A day's 180 minutes: recall 15, implement 75, read 35, design aloud 35,
test/profile 15, log 5. The implement block names items; an item `start` knows is graded,
any other is a self-scored block (listed, never hidden). Prints nothing."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from .branches import m03_target, names_m03
from .route import FULL, INTERMEDIATE, SEVEN_DAY
from .stages import unit_named

# (minutes, block, what): the daily loop; the implement block's items come from the day.
DAILY_LOOP = (
    (15, "recall", "10 cards alternating with 8 practice questions from 4 lanes"),
    (75, "implement", ""),
    (35, "read", "one owning code path or design doc; draw its state boundary"),
    (35, "design aloud", "a system-design or deep-dive slice, aloud"),
    (15, "test/profile", "canaries, probes and grading (`check`)"),
    (5, "log", "the first wrong decision and the re-solve it schedules (the check records both)"),
)

# The 14-day content: each day's implement items (kit names; "+" items are stretch).
FOURTEEN_DAYS: dict[int, tuple[str, ...]] = {
    1: ("P01", "P02", "P03", "+P06"),
    2: ("P10", "P11", "+P07", "+P08", "+P09"),
    3: ("M01",),
    4: ("M02",),
    5: ("M02", "M03"),
    6: ("M03",),
    7: ("M04",),
    8: ("M04", "P27", "+T01", "+T03"),
    9: ("M05", "P25"),
    10: ("M10", "P28"),
    11: ("prefix_cache", "+T04"),
    12: ("deep dive (6 axes, 0-3 each)",),
    13: ("full-loop rehearsal (coding mock 4)",),
    14: ("M01", "design outline (20m)", "kernel explanation (20m)"),
}
SEVEN_DAYS: dict[int, tuple[str, ...]] = {
    1: ("P03", "P11", "+P06", "+P08", "+P14"),
    2: ("M01",),
    3: ("M02",),
    4: ("M03",),
    5: ("M04",),
    6: ("full loop (mock 4, deep dive, system mock 1)",),
    7: ("clean re-solves", "design outline (20m)", "kernel explanation (20m)"),
}
EXITS = {  # a day's exit condition where the kit states one
    1: "view vs allocation for any shape and stride",
    2: "a full batched sampler in 40 minutes, all-masked rows and T=0 included",
    6: "full prefill, chunked prefill and step decode agree",
    10: "logits, cached parity, deterministic top-2",
}
# The intermediate route keeps the 14-day content of days 1-10 and 12-14.
INTERMEDIATE_DAYS = (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 13, 14)


@dataclass(frozen=True)
class PlanItem:
    name: str
    stretch: bool
    item: str | None  # the practice item `start` begins (None: not graded here)


@dataclass(frozen=True)
class Day:
    number: int  # the route's day (1-based)
    content: int  # the 14-day content day it follows (7-day: its own)
    items: tuple[PlanItem, ...]
    exit: str
    protected: bool


def route_length(route: str) -> int:
    return {FULL: 14, INTERMEDIATE: len(INTERMEDIATE_DAYS), SEVEN_DAY: 7}[route]


def day_of(route: str, number: int, protected: tuple[str, ...], branch: str | None = None) -> Day:
    """Day `number` of `route` (1-based, within its length); M03 on the recorded `branch`."""
    if route == SEVEN_DAY:
        content, names = number, SEVEN_DAYS[number]
        exit_ = ""
    else:
        content = INTERMEDIATE_DAYS[number - 1] if route == INTERMEDIATE else number
        names, exit_ = FOURTEEN_DAYS[content], EXITS.get(content, "")
    items = tuple(_item(name, branch) for name in names)
    return Day(number, content, items, exit_, f"d{content}" in protected)


def _item(name: str, branch: str | None) -> PlanItem:
    bare = name.removeprefix("+")
    unit = unit_named(bare) if " " not in bare else None
    package = m03_target(branch) if names_m03(bare) else unit.package if unit else None
    return PlanItem(bare, name.startswith("+"), package)


def day_number(first_day: str, today: date) -> int:
    """Today's day of the route: day 1 is the day it was fixed."""
    return (today - date.fromisoformat(first_day)).days + 1
