"""The practice store: schema version, transactions, clear errors, nothing deleted."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from gptlab_practice.learned import verdict
from gptlab_practice.store import SCHEMA_VERSION, Store, StoreError

pytestmark = [pytest.mark.extension, pytest.mark.owner("practice")]

NOW = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


def test_a_new_store_carries_its_schema_version(tmp_path: Path) -> None:
    path = tmp_path / "practice.sqlite3"
    with Store(path) as store:
        store.start_attempt("kv_cache", tmp_path / "kv_cache_attempt.py", NOW, 15, 5)
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    with Store(path) as store:  # reopened as it is
        assert [a.mechanism for a in store.attempts()] == ["kv_cache"]


def test_a_corrupt_store_is_an_error_naming_the_file_and_is_left_untouched(tmp_path: Path) -> None:
    path = tmp_path / "practice.sqlite3"
    garbage = b"these are not the bytes of an SQLite database" * 100
    path.write_bytes(garbage)
    with pytest.raises(StoreError, match=str(path)):
        Store(path)
    assert path.read_bytes() == garbage


def test_another_sqlite_file_is_not_taken_over(tmp_path: Path) -> None:
    path = tmp_path / "practice.sqlite3"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE mine (x)")
    with pytest.raises(StoreError, match="not a practice store"):
        Store(path)
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT name FROM sqlite_master").fetchall() == [("mine",)]


def test_a_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "practice.sqlite3"
    Store(path).close()
    with sqlite3.connect(path) as db:
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    with pytest.raises(StoreError, match="newer"):
        Store(path)


def test_a_locked_store_is_an_error_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "practice.sqlite3"
    Store(path).close()
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with (
            pytest.raises(StoreError, match="locked") as error,
            Store(path, timeout_s=0.1) as store,
        ):
            store.start_attempt("tinygpt", tmp_path / "tiny_gpt_attempt.py", NOW, 10, 7)
        assert str(path) in str(error.value)
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def test_a_failed_write_leaves_nothing_behind(tmp_path: Path) -> None:
    with Store(tmp_path / "practice.sqlite3") as store:
        attempt = store.start_attempt("tinygpt", tmp_path / "a.py", NOW, 10, 7)
        check = store.begin_check(attempt, 1, NOW)
        # no budget for the stage a pass would open: a damaged record, rolled back whole
        with pytest.raises(StoreError, match="damaged"):
            store.finish_check(check, [(1, "passed", 3, 0, None, "")], 1.0, NOW, {}, None)
        assert [c.outcome for c in store.checks(attempt)] == ["running"]
        assert [s.passed_at for s in store.stages(attempt)] == [None]
        assert store.attempt(attempt).stage == 1


def test_a_note_joins_the_first_wrong_decision_until_the_reference_is_opened(
    tmp_path: Path,
) -> None:
    with Store(tmp_path / "practice.sqlite3") as store:
        attempt = store.start_attempt("tinygpt", tmp_path / "a.py", NOW, 10, 7)
        fail = [(1, "failed", 2, 1, "tying", "AssertionError")]
        store.finish_check(store.begin_check(attempt, 1, NOW), fail, 1.0, NOW, {}, None)
        store.finish_check(store.begin_check(attempt, 1, NOW), fail, 1.0, NOW, {}, "two Parameters")
        store.open_reference(attempt, NOW)
        store.finish_check(store.begin_check(attempt, 1, NOW), fail, 1.0, NOW, {}, "later")
        recorded = store.attempt(attempt)
        assert (recorded.first_wrong_owner, recorded.first_wrong_note) == (
            "tying",
            "two Parameters",
        )
        assert [text for _, text in store.notes(attempt)] == ["two Parameters", "later"]


def _done(store: Store, tmp_path: Path, day: int, minutes: list[int]) -> int:
    when = NOW.replace(day=day)
    attempt = store.start_attempt("kv_cache", tmp_path / "k.py", when, minutes[0], len(minutes))
    budgets = {n: m for n, m in enumerate(minutes, start=1)}
    check = store.begin_check(attempt, 1, when)
    outcomes: list[Any] = [(n, "passed", 1, 0, None, "") for n in budgets]
    store.finish_check(check, outcomes, 1.0, when, budgets, None)
    return attempt


def test_learned_needs_a_re_solve_on_a_later_day_within_budget_without_the_reference(
    tmp_path: Path,
) -> None:
    with Store(tmp_path / "practice.sqlite3") as store:
        _done(store, tmp_path, 1, [5, 5])
        _done(store, tmp_path, 1, [5, 5])  # same day
        attempts = store.attempts()
        stages = {a.id: store.stages(a.id) for a in attempts}
        assert verdict(attempts, stages).why.endswith("same day as the one before (2026-12-01)")
        third = _done(store, tmp_path, 2, [5, 5])
        store.open_reference(third, NOW)
        attempts = store.attempts()
        stages = {a.id: store.stages(a.id) for a in attempts}
        assert verdict(attempts, stages).why == "the reference was opened during attempt 3"
        _done(store, tmp_path, 3, [5, 5])
        attempts = store.attempts()
        stages = {a.id: store.stages(a.id) for a in attempts}
        assert verdict(attempts, stages).learned


def test_start_new_archives_the_attempt_and_an_unrecorded_file_is_refused(
    practise: Any, home: Path
) -> None:
    home.mkdir(parents=True)
    mine = home / "kv_cache_attempt.py"
    mine.write_text("# my own work, not started by the tool\n")
    refused = practise("start", "kv_cache")
    assert refused.code == 1 and "not a recorded attempt" in refused.err
    assert mine.read_text() == "# my own work, not started by the tool\n"

    assert practise("start", "kv_cache", "--new").code == 0
    mine.write_text(mine.read_text() + "def append_kv_cache(): ...\n")
    again = practise("start", "kv_cache", "--new")
    assert again.code == 0
    archived = (home / "archive").glob("kv_cache_attempt.*.py")
    assert {p.read_text().splitlines()[-1] for p in archived} == {
        "# my own work, not started by the tool",
        "def append_kv_cache(): ...",
    }
    with Store(home / "practice.sqlite3") as store:
        assert [a.status for a in store.attempts()] == ["abandoned", "active"]
