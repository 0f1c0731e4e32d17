"""`today` and `plan` follow the route the diagnostic fixed, on a fake clock: each day's
blocks and items (graded or self-scored), protected days, and a repair and the re-solves a
miss schedules placed first in the implement block."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gptlab_practice.schedule import after_miss
from gptlab_practice.stages import units
from gptlab_practice.store import STORE_NAME, Store

pytestmark = [pytest.mark.extension, pytest.mark.owner("practice")]

Practise = Any
FakeClock = Any


def implement_block(out: str) -> list[str]:
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip() == "75m implement:")
    block = []
    for line in lines[start + 1 :]:
        if not line.startswith("    "):
            break
        block.append(line.strip())
    return block


def miss(home: Path, clock: FakeClock, item: str, owner: str) -> None:
    """A check of `item` that failed on `owner`, recorded as a decided miss."""
    with Store(home / STORE_NAME) as store:
        now = clock()
        attempt = store.start_attempt(item, home / f"{item}_attempt.py", now, 30, 5)
        check = store.begin_check(attempt, 1, now)
        store.finish_check(check, [(1, "failed", 3, 1, owner, "why")], 1.0, now, {1: 30}, None,
                           on_miss=after_miss(units()[item], now.date()))  # fmt: skip


def test_three_days_of_today_follow_the_route_with_a_repair_after_a_miss(
    practise: Practise, home: Path, clock: FakeClock
) -> None:
    assert practise("today").err.startswith("gptlab-practice: no route yet")
    fixed = practise("diagnose", "--self", "kv_capacity=2", "--self", "request_path=2", "--finish")
    assert "route recorded: 14-day (total 4/15)" in fixed.out  # no drill attempted: zeros
    day1 = practise("today").out
    assert day1.startswith("day 1 of the 14-day route (day 1: 2026-12-01): protected")
    assert implement_block(day1) == [
        "P01: graded, `start P01`",
        "P02: graded, `start P02`",
        "P03: graded, `start P03`",
        "stretch P06: graded, `start P06`",
    ]
    assert "35m design aloud: a system-design or deep-dive slice, aloud (self-scored)" in day1

    miss(home, clock, "kv_cache", "fixed_capacity_storage")  # its repair drill: P20
    block = implement_block(practise("today").out)
    assert (
        block[0] == "repair first: P20 owns kv_cache attempt 1's failure (`repair`, or `start P20`)"
    )
    assert block[1].startswith("re-solve due: kv_cache (later the same day")
    assert block[2] == "P01: graded, `start P01`"

    clock.advance(days=1)
    day2 = practise("today").out
    assert day2.startswith("day 2 of the 14-day route")
    block = implement_block(day2)
    assert block[0].startswith("repair first: P20")
    assert "P11: graded, `start P11`" in block and "stretch P07: graded, `start P07`" in block
    assert practise("repair").code == 0  # P20 started: the repair is in progress
    assert not any(
        line.startswith("repair first") for line in implement_block(practise("today").out)
    )

    clock.advance(days=1)
    day3 = practise("today").out
    assert day3.startswith("day 3 of the 14-day route (day 1: 2026-12-01): protected")
    assert "M01 tinygpt: graded, `start M01`" in implement_block(day3)
    plan = practise("plan").out.splitlines()
    assert plan[0] == "the 14-day route from 2026-12-01 (M03 branch: simple):"
    assert plan[3].startswith("  d3  2026-12-03  M01  [today; protected]")
    assert "deep dive" in plan[12]  # day 12: self-scored, listed
    assert plan[-1] == f"picture: {home / 'route.png'}" or "not drawn" in plan[-1]
    assert "deep dive (6 axes, 0-3 each): not graded by this project (self-scored)" in (
        practise("today", "--day", "12").out
    )
