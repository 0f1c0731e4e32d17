"""Every practice command against a damaged, read-only, locked or newer store: one line on
stderr naming the file and what to do (exit status 3), never a traceback, and the file
left as it was. A store is damaged here the ways a real one gets damaged: bytes lost or
overwritten, a table or a column gone, rows this version cannot use (an unknown item, a
stage past the item's last, a timestamp that is not one, a review of a missing attempt)."""

from __future__ import annotations

import sqlite3
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gptlab_practice import store as store_module
from gptlab_practice.cli import main
from gptlab_practice.commands import Practice
from gptlab_practice.store import SCHEMA_VERSION, STORE_NAME, StoreError
from gptlab_practice.watch import watch

pytestmark = [pytest.mark.extension, pytest.mark.owner("practice")]

ROOT = Path(__file__).resolve().parents[3]
FakeClock = Any
COMMANDS = [
    ("start", "P19", "--new"),
    ("start", "P05"),
    ("check",),
    ("check", "P19", "--note", "a note"),
    ("repair",),
    ("reveal",),
    ("due",),
    ("status",),
    ("history",),
    ("history", "P19"),
    ("watch",),
]


def sql(*statements: str) -> Callable[[Path], None]:
    def damage(path: Path) -> None:
        db = sqlite3.connect(path, isolation_level=None)
        db.execute("PRAGMA foreign_keys = OFF")
        for statement in statements:
            db.execute(statement)
        db.close()

    return damage


def overwrite(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[100:4096] = b"\xa5" * (4096 - 100)  # the schema page's cells, header kept
    path.write_bytes(bytes(data))


def truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:1500])


DAMAGE: dict[str, Callable[[Path], None]] = {
    "overwritten bytes": overwrite,
    "truncated": truncate,
    "a table gone": sql("DROP TABLE reviews"),
    "a column gone": sql("ALTER TABLE attempts DROP COLUMN kind"),
    "an unknown item": sql("UPDATE attempts SET mechanism = 'nonesuch'"),
    "a stage past the last": sql("UPDATE attempts SET stage = 9"),
    "a stage row gone": sql("DELETE FROM stages"),
    "not a timestamp": sql("UPDATE attempts SET started_at = 'yesterday'"),
    "a naive timestamp": sql("UPDATE checks SET at = '2026-12-01T09:00:00'"),
    "text for a number": sql("UPDATE attempts SET stage = 'two'"),
    "a review of a missing attempt": sql(
        "INSERT INTO reviews (item, step, due_day, miss_attempt_id) "
        "VALUES ('P19', 'same day', '2026-12-01', 99)"
    ),
    "a newer schema": sql(f"PRAGMA user_version = {SCHEMA_VERSION + 1}"),
}


@pytest.fixture
def recorded(tmp_path: Path, clock: FakeClock) -> Path:
    """A home with a P19 attempt whose check failed on its owner (a miss, re-solves due)."""
    home = tmp_path / "practice"
    practice = Practice(home, ROOT, clock, lambda line: None)
    practice.start("P19", new=False)
    now = clock()
    store = practice.store
    attempt = store.attempts()[0].id
    check = store.begin_check(attempt, 1, now)
    store.finish_check(check, [(1, "failed", 2, 3, "p19", "why")], 1.0, now, {}, "a note")
    practice.close()
    return home


def run_command(home: Path, argv: tuple[str, ...], clock: FakeClock) -> int:
    if argv == ("watch",):  # watch's loop is stopped before it starts: only its reads count
        stop = threading.Event()
        stop.set()
        try:
            practice = Practice(home, ROOT, clock, lambda line: None)
            try:
                return watch(practice, None, stop=stop)
            finally:
                practice.close()
        except StoreError as error:
            print(f"gptlab-practice: {error}", file=sys.stderr)
            return 3
    return main(["--home", str(home), "--root", str(ROOT), *argv], clock=clock)


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_every_command_on_a_damaged_store_is_one_line_and_changes_nothing(
    damage: str, recorded: Path, clock: FakeClock, capsys: pytest.CaptureFixture[str]
) -> None:
    path = recorded / STORE_NAME
    DAMAGE[damage](path)
    pristine = path.read_bytes()
    (recorded / "p19_attempt.py").unlink()  # `check` stops before grading: no grader run here
    problems = []
    for argv in COMMANDS:
        capsys.readouterr()
        try:
            code = run_command(recorded, argv, clock)
        except BaseException as error:  # a traceback: what this test exists to catch
            problems.append(f"{argv}: {type(error).__name__}: {error}")
            continue
        err = capsys.readouterr().err.strip().splitlines()
        if code == 3:
            if len(err) != 1 or str(path) not in err[0]:
                problems.append(f"{argv}: exit 3 with {err}")
            if path.read_bytes() != pristine:
                problems.append(f"{argv}: the store changed")
        elif code not in (0, 1, 2):
            problems.append(f"{argv}: exit status {code}")
        path.write_bytes(pristine)  # every command meets the same damaged store
        for made in recorded.glob("*_attempt.py"):  # what a command that went ahead wrote
            made.unlink()
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize(
    "damage", ["a stage past the last", "an unknown item", "text for a number"]
)
def test_a_check_on_a_damaged_store_leaves_no_running_row(
    damage: str, recorded: Path, clock: FakeClock, capsys: pytest.CaptureFixture[str]
) -> None:
    path = recorded / STORE_NAME
    DAMAGE[damage](path)
    before = path.read_bytes()
    assert run_command(recorded, ("check",), clock) == 3
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(path) in err[0] and "move it aside" in err[0]
    assert path.read_bytes() == before


def test_a_read_only_store_is_one_line_and_nothing_is_recorded(
    recorded: Path,
    clock: FakeClock,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = recorded / STORE_NAME
    before = path.read_bytes()
    connect = sqlite3.connect

    def read_only(target: object, *args: Any, **kwargs: Any) -> sqlite3.Connection:
        if str(target) == ":memory:":
            db: sqlite3.Connection = connect(":memory:", *args, **kwargs)
        else:
            db = connect(f"file:{target}?mode=ro", *args, uri=True, **kwargs)
        return db

    monkeypatch.setattr(sqlite3, "connect", read_only)  # SQLite's own read-only mode
    assert run_command(recorded, ("status",), clock) == 0  # reading still works
    code = run_command(recorded, ("start", "P05"), clock)
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 3 and len(err) == 1 and str(path) in err[0]
    assert "cannot be written" in err[0] and "writable" in err[0]
    assert path.read_bytes() == before


def test_a_locked_store_is_one_line_for_a_writing_command(
    recorded: Path,
    clock: FakeClock,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = recorded / STORE_NAME
    monkeypatch.setattr(store_module, "LOCK_WAIT_S", 0.1)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        for argv in (("start", "P05"), ("status",), ("check", "P19")):
            assert run_command(recorded, argv, clock) == 3
            err = capsys.readouterr().err.strip().splitlines()
            assert len(err) == 1 and str(path) in err[0] and "locked" in err[0]
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def test_a_store_that_is_a_folder_is_one_line(
    tmp_path: Path, clock: FakeClock, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "practice"
    (home / STORE_NAME).mkdir(parents=True)
    assert run_command(home, ("status",), clock) == 3
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(home / STORE_NAME) in err[0]
