"""The kit's sibling rule: a failed transfer (PT) case schedules its owner's re-solve and,
three days later, a different case of its family, never one of the last two drawn, nor a
contract delta already drawn, nor a case whose owner is unresolved; `due` and `status` say
which sibling and why. Cases are read from the drill catalogue (more land there as they are
built): nothing here names a case."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pytest

from gptlab_practice.sampler import (  # the catalogue, read through practice
    DRILLS,
    DrawHistory,
    Drill,
    history_of,
    owner_item,
    sibling,
    transfer_cases,
    unresolved_items,
)
from gptlab_practice.schedule import after_miss
from gptlab_practice.stages import units
from gptlab_practice.store import Store

pytestmark = [pytest.mark.extension, pytest.mark.owner("practice")]

Practise = Any
FakeClock = Any
DAY = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


def family_of_three(*, drill_owner: bool = False) -> list[Drill]:
    """The cases of the first family with at least three cases (the first case's owner a
    P drill, with `drill_owner`: its repair is one drill check)."""
    families = Counter(d.family for d in transfer_cases() if d.family)
    for family, count in families.items():
        cases = [d for d in transfer_cases() if d.family == family]
        if count >= 3 and (not drill_owner or cases[0].owner in DRILLS):
            return cases
    pytest.skip("no family of three cases in the catalogue")


def test_the_sibling_is_of_the_missed_family_and_never_the_missed_case() -> None:
    for case in transfer_cases():
        drawn = sibling(case, DrawHistory((case.id,)))
        assert drawn.case is None or drawn.case.id != case.id
        if case.family and drawn.case is not None:
            assert drawn.case.family == case.family
            assert case.family in drawn.why


def test_the_last_two_drawn_and_drawn_deltas_are_left_out() -> None:
    cases = family_of_three()
    missed, recent = cases[0], cases[1]
    drawn = sibling(missed, DrawHistory((recent.id, missed.id)))
    assert drawn.case is not None and drawn.case.id not in (missed.id, recent.id)
    assert (recent.id, "one of the last 2 drawn") in drawn.left_out
    # drawn three draws ago: no longer among the last two, but its delta was drawn
    older = DrawHistory((recent.id, "PT99", missed.id))
    again = sibling(missed, older)
    assert again.case is not None and again.case.id != recent.id
    assert (recent.id, "its contract delta was drawn already") in again.left_out


def test_a_case_whose_owner_is_unresolved_is_left_out_but_not_for_the_missed_owner() -> None:
    cases = family_of_three()
    missed, first = cases[0], cases[1]
    history = DrawHistory((missed.id,), frozenset({owner_item(first.owner)}))
    drawn = sibling(missed, history)
    if owner_item(first.owner) == owner_item(missed.owner):  # repaired before the draw
        assert drawn.case is not None and drawn.case.id == first.id
    else:
        assert drawn.case is not None and drawn.case.id != first.id
        assert (first.id, f"owner {first.owner} unresolved") in drawn.left_out


def test_nothing_left_draws_nothing_and_says_why() -> None:
    cases = family_of_three()
    missed = cases[0]
    history = DrawHistory(
        (*[d.id for d in cases[1:]], missed.id),
        frozenset(owner_item(d.owner) for d in cases),
    )
    drawn = sibling(missed, history)
    assert drawn.case is None
    assert {case_id for case_id, _ in drawn.left_out} == {d.id for d in cases[1:]}
    planned = after_miss(units()[missed.id], date(2026, 12, 1), history)
    assert all(not p.item.startswith("PT") for p in planned)  # the owner's re-solve only


def test_the_record_gives_the_draws_in_order_and_the_unresolved_owners(tmp_path: Path) -> None:
    cases = family_of_three(drill_owner=True)
    missed, other = cases[0], cases[1]
    with Store(tmp_path / "practice.sqlite3") as store:
        store.start_attempt(other.id, Path("a.py"), DAY, 30, 1)
        attempt = store.start_attempt(missed.id, Path("b.py"), DAY.replace(hour=10), 30, 1)
        history = history_of(store)
        assert history.drawn == (other.id, missed.id)
        check = store.begin_check(attempt, 1, DAY)
        planned = after_miss(units()[missed.id], DAY.date(), history)
        store.finish_check(check, [(1, "failed", 1, 1, "x", "why")], 1.0, DAY, {}, None,
                           on_miss=planned)  # fmt: skip
        assert unresolved_items(store) == {owner_item(missed.owner)}
        drawn = history_of(store).drawn
        assert drawn[:2] == (other.id, missed.id) and drawn[2] == planned[-1].item


def failing_attempt(case: Drill) -> str:
    """Every graded name defined, each raising: it imports, and its tests fail (routed)."""
    lines = []
    for name in case.graded:
        if name[0].isupper():
            lines += [f"class {name}:", "    def __init__(self, *a, **k):",
                      "        raise NotImplementedError", ""]  # fmt: skip
        else:
            lines += [f"def {name}(*a, **k):", "    raise NotImplementedError", ""]
    return "\n".join(lines)


def test_a_failed_case_repaired_at_its_owner_draws_a_different_sibling_three_days_later(
    practise: Practise, home: Path, clock: FakeClock, paste: Callable[[str], str]
) -> None:
    cases = family_of_three(drill_owner=True)
    missed, recent = cases[0], cases[1]
    assert practise("start", recent.id).code == 0  # drawn earlier (never finished)
    clock.advance(minutes=5)
    assert practise("start", missed.id).code == 0
    attempt = home / f"{missed.key}_attempt.py"
    attempt.write_text(attempt.read_text() + failing_attempt(missed))
    failed = practise("check", missed.id)
    assert failed.code == 1, failed.out + failed.err
    assert f"{missed.owner} {clock().date()} (owner re-solve)" in failed.out
    assert f"is the sibling of {missed.id}: a different {missed.family} case" in failed.out

    repaired = practise("repair")  # the owner, linked to the miss
    assert repaired.code == 0 and f"{missed.owner} attempt 1" in repaired.out
    owner_file = home / f"{missed.owner.lower()}_attempt.py"
    owner_file.write_text(owner_file.read_text() + paste(missed.owner))
    assert practise("check", missed.owner).code == 0
    assert "nothing due today" in practise("due").out  # the owner's re-solve is done

    clock.advance(days=3)
    due = practise("due").out
    print(due)
    sibling_line = next(line for line in due.splitlines() if "a different case three days" in line)
    drawn = sibling_line.split()[1].rstrip(":")
    assert drawn in {d.id for d in cases} and drawn not in (missed.id, recent.id)
    assert f"re-solve a different case three days after the miss at {missed.id}" in sibling_line
    assert f"why: {drawn} is the sibling of {missed.id}" in due
    assert f"{recent.id} (one of the last 2 drawn)" in due
    assert "wait:" not in due  # the owner was repaired
    status = practise("status").out
    assert f"{drawn} is the sibling of {missed.id}" in status
