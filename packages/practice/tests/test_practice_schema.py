"""Schema 2: a real schema-1 store (tests/data, made by the schema-1 code) migrates whole,
in one transaction; and the kit's re-solve schedule as the store keeps it."""

from __future__ import annotations

import shutil
import sqlite3
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest

from gptlab_practice.schedule import after_miss
from gptlab_practice.stages import units
from gptlab_practice.store import SCHEMA_VERSION, Store, StoreError

pytestmark = [pytest.mark.extension, pytest.mark.owner("practice")]

V1 = Path(__file__).parent / "data" / "practice_v1.sqlite3"  # made by data/make_practice_v1.py
V1_COLUMNS = {
    "attempts": "id, mechanism, file, started_at, day, stage, stage_count, status, finished_at,"
    " reference_opened_at, first_wrong_owner, first_wrong_stage, first_wrong_note",
    "stages": "attempt_id, stage, minutes, started_at, passed_at",
    "checks": "id, attempt_id, stage, at, outcome, tests_passed, tests_failed, failed_owner,"
    " reason, wall_s",
    "notes": "id, attempt_id, at, text",
}
DAY = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


def dump(path: Path) -> dict[str, list[tuple[object, ...]]]:
    with sqlite3.connect(path) as db:
        return {
            table: db.execute(f"SELECT {columns} FROM {table} ORDER BY rowid").fetchall()
            for table, columns in V1_COLUMNS.items()
        }


def version(path: Path) -> int:
    with sqlite3.connect(path) as db:
        return int(db.execute("PRAGMA user_version").fetchone()[0])


def test_a_schema_1_store_migrates_and_keeps_every_row(tmp_path: Path) -> None:
    path = tmp_path / "practice.sqlite3"
    shutil.copyfile(V1, path)
    before = dump(path)
    assert version(path) == 1 and all(before.values())
    with Store(path) as store:
        attempts = store.attempts()
        assert [(a.mechanism, a.status, a.kind) for a in attempts] == [
            ("tinygpt", "done", "mechanism"),
            ("kv_cache", "active", "mechanism"),
            ("tinygpt", "active", "mechanism"),
        ]
        assert attempts[0].first_wrong_note == "took isinstance(x, int)"
        assert [c.ledger_filled for c in store.checks(attempts[0].id)] == [None] * 9
        assert store.stages(attempts[0].id)[0].seconds == 40 * 60  # paused_s defaults to 0
        assert store.reviews() == []
    assert version(path) == SCHEMA_VERSION == 3
    assert dump(path) == before
    with Store(path) as store:  # opened again: nothing to do
        assert len(store.attempts()) == 3


def test_a_migration_that_fails_leaves_the_schema_1_store_as_it_was(tmp_path: Path) -> None:
    path = tmp_path / "practice.sqlite3"
    shutil.copyfile(V1, path)
    with sqlite3.connect(path) as db:  # a table in the way: the migration's last step fails
        db.execute("CREATE TABLE reviews (x)")
    before = dump(path)
    with pytest.raises(StoreError, match=str(path)):
        Store(path)
    assert version(path) == 1 and dump(path) == before
    with sqlite3.connect(path) as db:
        columns = [row[1] for row in db.execute("PRAGMA table_info(attempts)")]
    assert "kind" not in columns  # the ALTERs before the failing step were rolled back


def _attempt(store: Store, item: str, when: datetime, *, miss: bool) -> int:
    """One attempt at `item` on a one-stage budget: a miss, then a pass (or a clean pass)."""
    unit = units()[item]
    attempt = store.start_attempt(item, Path(f"{item}.py"), when, 60, 1)
    if miss:
        check = store.begin_check(attempt, 1, when)
        failed = [(1, "failed", 1, 1, "some_owner", "AssertionError")]
        store.finish_check(
            check, failed, 1.0, when, {}, None, on_miss=after_miss(unit, when.date())
        )
    check = store.begin_check(attempt, 1, when)
    store.finish_check(check, [(1, "passed", 2, 0, None, "")], 1.0, when, {}, None)
    return attempt


def test_a_miss_schedules_same_day_next_day_three_days_and_a_week(tmp_path: Path) -> None:
    with Store(tmp_path / "practice.sqlite3") as store:
        _attempt(store, "P19", DAY, miss=True)
        reviews = store.reviews("P19")
        assert [(r.step, r.due_day) for r in reviews] == [
            ("same day", "2026-12-01"),
            ("next day", "2026-12-02"),
            ("3 days", "2026-12-04"),
            ("a week", "2026-12-08"),
        ]
        # a re-solve the same day with no unrelated task between does not count
        _attempt(store, "P19", DAY + timedelta(hours=1), miss=False)
        assert next(r.status for r in store.reviews("P19")) == "pending"
        _attempt(store, "P03", DAY + timedelta(hours=2), miss=False)  # an unrelated task
        _attempt(store, "P19", DAY + timedelta(hours=3), miss=False)
        _attempt(store, "P19", DAY + timedelta(hours=4), miss=False)  # one a day
        assert [r.status for r in store.reviews("P19")] == ["done", "pending", "pending", "pending"]
        # next day: the next-day one; a re-solve on day 3 is early for the 3-day one
        _attempt(store, "P19", DAY + timedelta(days=1), miss=False)
        _attempt(store, "P19", DAY + timedelta(days=2), miss=False)
        assert [r.status for r in store.reviews("P19")] == ["done", "done", "pending", "pending"]
        _attempt(store, "P19", DAY + timedelta(days=3), miss=False)
        assert [r.done_day for r in store.reviews("P19")][2] == "2026-12-04"


def test_a_failed_transfer_case_schedules_its_owner_and_a_different_sibling(
    tmp_path: Path,
) -> None:
    planned = after_miss(units()["PT17"], date(2026, 12, 1))
    assert [(p.item, p.due_day) for p in planned] == [
        ("P05", "2026-12-01"),
        (planned[1].item, "2026-12-04"),
    ]
    assert planned[1].item.startswith("PT") and planned[1].item != "PT17"
    with Store(tmp_path / "practice.sqlite3") as store:
        _attempt(store, "PT17", DAY, miss=True)
        assert {r.item for r in store.reviews()} == {"P05", planned[1].item}
