"""The practice record: attempts, stages, checks and notes in SQLite (`practice.sqlite3`).

stdlib sqlite3, the schema version in `PRAGMA user_version`, every write in one
`BEGIN IMMEDIATE` transaction (all of it lands or none of it). Rows are never
deleted: a new attempt leaves the old one as it was (status `abandoned`), and a
check that never finished stays visible as `running` (shown as interrupted).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

SCHEMA_VERSION = 1
STORE_NAME = "practice.sqlite3"

_SCHEMA = """
CREATE TABLE attempts (
    id INTEGER PRIMARY KEY,
    mechanism TEXT NOT NULL,
    file TEXT NOT NULL,
    started_at TEXT NOT NULL,          -- ISO 8601 with offset, from the clock
    day TEXT NOT NULL,                 -- the learner's calendar day (YYYY-MM-DD)
    stage INTEGER NOT NULL,            -- the stage being worked on (1-based)
    stage_count INTEGER NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('active', 'done', 'abandoned')),
    finished_at TEXT,
    reference_opened_at TEXT,
    first_wrong_owner TEXT,
    first_wrong_stage INTEGER,
    first_wrong_note TEXT
);
CREATE TABLE stages (
    attempt_id INTEGER NOT NULL REFERENCES attempts(id),
    stage INTEGER NOT NULL,
    minutes INTEGER NOT NULL,          -- the budget when the stage began
    started_at TEXT NOT NULL,
    passed_at TEXT,
    PRIMARY KEY (attempt_id, stage)
);
CREATE TABLE checks (
    id INTEGER PRIMARY KEY,
    attempt_id INTEGER NOT NULL REFERENCES attempts(id),
    stage INTEGER NOT NULL,
    at TEXT NOT NULL,
    outcome TEXT NOT NULL CHECK (outcome IN ('running', 'passed', 'failed', 'error')),
    tests_passed INTEGER NOT NULL DEFAULT 0,
    tests_failed INTEGER NOT NULL DEFAULT 0,
    failed_owner TEXT,
    reason TEXT NOT NULL DEFAULT '',
    wall_s REAL
);
CREATE TABLE notes (
    id INTEGER PRIMARY KEY,
    attempt_id INTEGER NOT NULL REFERENCES attempts(id),
    at TEXT NOT NULL,
    text TEXT NOT NULL
);
"""


# Attempts with their number among the same mechanism's (what the learner sees).
_NUMBERED = (
    "SELECT * FROM (SELECT *, row_number() OVER (PARTITION BY mechanism ORDER BY id) AS number"
    " FROM attempts)"
)


class StoreError(Exception):
    """The store cannot be used (locked, corrupt, or from a newer version); names the file."""


@dataclass(frozen=True)
class Attempt:
    id: int
    number: int  # 1, 2, ... among the attempts at the same mechanism
    mechanism: str
    file: str
    started_at: datetime
    day: str
    stage: int
    stage_count: int
    status: str
    finished_at: datetime | None
    reference_opened_at: datetime | None
    first_wrong_owner: str | None
    first_wrong_stage: int | None
    first_wrong_note: str | None


@dataclass(frozen=True)
class StageRecord:
    attempt_id: int
    stage: int
    minutes: int
    started_at: datetime
    passed_at: datetime | None

    @property
    def seconds(self) -> float | None:
        if self.passed_at is None:
            return None
        return (self.passed_at - self.started_at).total_seconds()


@dataclass(frozen=True)
class CheckRecord:
    id: int
    attempt_id: int
    stage: int
    at: datetime
    outcome: str
    tests_passed: int
    tests_failed: int
    failed_owner: str | None
    reason: str
    wall_s: float | None


def _time(value: object) -> datetime | None:
    return datetime.fromisoformat(str(value)) if value is not None else None


def _attempt(row: sqlite3.Row) -> Attempt:
    return Attempt(
        id=row["id"],
        number=row["number"],
        mechanism=row["mechanism"],
        file=row["file"],
        started_at=datetime.fromisoformat(row["started_at"]),
        day=row["day"],
        stage=row["stage"],
        stage_count=row["stage_count"],
        status=row["status"],
        finished_at=_time(row["finished_at"]),
        reference_opened_at=_time(row["reference_opened_at"]),
        first_wrong_owner=row["first_wrong_owner"],
        first_wrong_stage=row["first_wrong_stage"],
        first_wrong_note=row["first_wrong_note"],
    )


class Store:
    """One practice home's record. Use as a context manager (closes the connection)."""

    def __init__(self, path: Path, *, timeout_s: float = 2.0) -> None:
        self.path = path
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(path, timeout=timeout_s, isolation_level=None)
            self._db.row_factory = sqlite3.Row
            self._db.execute("PRAGMA foreign_keys = ON")
            self._migrate()
        except sqlite3.DatabaseError as error:
            raise self._error(error) from None
        except OSError as error:
            raise StoreError(f"{path}: cannot open the practice store: {error}") from None

    def _error(self, error: sqlite3.DatabaseError) -> StoreError:
        text = str(error)
        if "locked" in text or "busy" in text:
            return StoreError(
                f"{self.path}: the practice store is locked by another process "
                "(another check still running?); try again when it has finished"
            )
        return StoreError(
            f"{self.path}: not a readable practice store ({text}); it was left untouched: "
            "move it aside to start a new record"
        )

    def _migrate(self) -> None:
        version = int(self._db.execute("PRAGMA user_version").fetchone()[0])
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"{self.path}: written by a newer gptlab-practice (schema {version}, "
                f"this one reads {SCHEMA_VERSION}); left untouched"
            )
        if version == 0:
            with self.transaction():
                tables = self._db.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
                if tables:
                    raise StoreError(f"{self.path}: an SQLite file that is not a practice store")
                for statement in _SCHEMA.split(";"):
                    if statement.strip():
                        self._db.execute(statement)
                self._db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """Every write: all of it or none of it; a lock held elsewhere is a StoreError."""
        try:
            self._db.execute("BEGIN IMMEDIATE")
        except sqlite3.DatabaseError as error:
            raise self._error(error) from None
        try:
            yield self._db
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        else:
            try:
                self._db.execute("COMMIT")
            except sqlite3.DatabaseError as error:
                raise self._error(error) from None

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _read(self, sql: str, *args: object) -> list[sqlite3.Row]:
        try:
            return list(self._db.execute(sql, args))
        except sqlite3.DatabaseError as error:
            raise self._error(error) from None

    # -- reading
    def attempts(self, mechanism: str | None = None) -> list[Attempt]:
        if mechanism is None:
            return [_attempt(r) for r in self._read(f"{_NUMBERED} ORDER BY id")]
        rows = self._read(f"{_NUMBERED} WHERE mechanism = ? ORDER BY id", mechanism)
        return [_attempt(r) for r in rows]

    def attempt(self, attempt_id: int) -> Attempt:
        return _attempt(self._read(f"{_NUMBERED} WHERE id = ?", attempt_id)[0])

    def active(self, mechanism: str | None = None) -> list[Attempt]:
        return [a for a in self.attempts(mechanism) if a.status == "active"]

    def stages(self, attempt_id: int) -> list[StageRecord]:
        rows = self._read("SELECT * FROM stages WHERE attempt_id = ? ORDER BY stage", attempt_id)
        return [
            StageRecord(
                r["attempt_id"],
                r["stage"],
                r["minutes"],
                datetime.fromisoformat(r["started_at"]),
                _time(r["passed_at"]),
            )
            for r in rows
        ]

    def checks(self, attempt_id: int) -> list[CheckRecord]:
        rows = self._read("SELECT * FROM checks WHERE attempt_id = ? ORDER BY id", attempt_id)
        return [
            CheckRecord(
                r["id"],
                r["attempt_id"],
                r["stage"],
                datetime.fromisoformat(r["at"]),
                r["outcome"],
                r["tests_passed"],
                r["tests_failed"],
                r["failed_owner"],
                r["reason"],
                r["wall_s"],
            )
            for r in rows
        ]

    def notes(self, attempt_id: int) -> list[tuple[datetime, str]]:
        rows = self._read("SELECT at, text FROM notes WHERE attempt_id = ? ORDER BY id", attempt_id)
        return [(datetime.fromisoformat(r["at"]), r["text"]) for r in rows]

    # -- writing (each one transaction)
    def start_attempt(
        self, mechanism: str, file: Path, now: datetime, first_minutes: int, stage_count: int
    ) -> int:
        with self.transaction() as db:
            db.execute(
                "UPDATE attempts SET status = 'abandoned'"
                " WHERE mechanism = ? AND status = 'active'",
                (mechanism,),
            )
            cursor = db.execute(
                "INSERT INTO attempts"
                " (mechanism, file, started_at, day, stage, stage_count, status)"
                " VALUES (?, ?, ?, ?, 1, ?, 'active')",
                (mechanism, str(file), now.isoformat(), now.date().isoformat(), stage_count),
            )
            attempt_id = int(cursor.lastrowid or 0)
            db.execute(
                "INSERT INTO stages (attempt_id, stage, minutes, started_at) VALUES (?, 1, ?, ?)",
                (attempt_id, first_minutes, now.isoformat()),
            )
        return attempt_id

    def begin_check(self, attempt_id: int, stage: int, now: datetime) -> int:
        """A `running` row before the attempt runs: an interrupted check stays visible."""
        with self.transaction() as db:
            cursor = db.execute(
                "INSERT INTO checks (attempt_id, stage, at, outcome) VALUES (?, ?, ?, 'running')",
                (attempt_id, stage, now.isoformat()),
            )
        return int(cursor.lastrowid or 0)

    def finish_check(
        self,
        check_id: int,
        outcomes: list[tuple[int, str, int, int, str | None, str]],
        wall_s: float,
        now: datetime,
        next_minutes: dict[int, int],
        note: str | None,
    ) -> None:
        """Record a check's verdict per stage, advance the attempt, note a first wrong decision.

        `outcomes`: (stage, outcome, passed, failed, failed owner, reason) in stage order;
        the first updates the `running` row, the rest are rows of their own (`check --all`).
        `next_minutes`: the budget of each stage that a pass opens.
        """
        with self.transaction() as db:
            attempt_id = int(
                db.execute("SELECT attempt_id FROM checks WHERE id = ?", (check_id,)).fetchone()[0]
            )
            attempt = _attempt(db.execute(f"{_NUMBERED} WHERE id = ?", (attempt_id,)).fetchone())
            for index, (stage, outcome, passed, failed, owner, reason) in enumerate(outcomes):
                values = (stage, outcome, passed, failed, owner, reason, wall_s)
                if index == 0:
                    db.execute(
                        "UPDATE checks SET stage = ?, outcome = ?, tests_passed = ?,"
                        " tests_failed = ?, failed_owner = ?, reason = ?, wall_s = ? WHERE id = ?",
                        (*values, check_id),
                    )
                else:
                    db.execute(
                        "INSERT INTO checks (attempt_id, at, stage, outcome, tests_passed,"
                        " tests_failed, failed_owner, reason, wall_s)"
                        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        (attempt_id, now.isoformat(), *values),
                    )
                if outcome == "passed":
                    self._pass_stage(db, attempt, stage, now, next_minutes)
                elif owner and attempt.first_wrong_owner is None:
                    db.execute(
                        "UPDATE attempts SET first_wrong_owner = ?, first_wrong_stage = ?"
                        " WHERE id = ?",
                        (owner, stage, attempt_id),
                    )
            if note:
                self._add_note(db, attempt_id, note, now)

    def _pass_stage(
        self,
        db: sqlite3.Connection,
        attempt: Attempt,
        stage: int,
        now: datetime,
        next_minutes: dict[int, int],
    ) -> None:
        db.execute(
            "UPDATE stages SET passed_at = ?"
            " WHERE attempt_id = ? AND stage = ? AND passed_at IS NULL",
            (now.isoformat(), attempt.id, stage),
        )
        if stage >= attempt.stage_count:
            db.execute(
                "UPDATE attempts SET status = 'done', finished_at = ?, stage = ? WHERE id = ?",
                (now.isoformat(), stage, attempt.id),
            )
            return
        db.execute("UPDATE attempts SET stage = ? WHERE id = ?", (stage + 1, attempt.id))
        db.execute(
            "INSERT OR IGNORE INTO stages (attempt_id, stage, minutes, started_at)"
            " VALUES (?, ?, ?, ?)",
            (attempt.id, stage + 1, next_minutes[stage + 1], now.isoformat()),
        )

    def _add_note(self, db: sqlite3.Connection, attempt_id: int, text: str, now: datetime) -> None:
        """A note joins a first wrong decision that has none yet, while the reference is closed."""
        row = db.execute(
            "SELECT first_wrong_owner, first_wrong_note, reference_opened_at FROM attempts"
            " WHERE id = ?",
            (attempt_id,),
        ).fetchone()
        if row[0] is not None and row[1] is None and row[2] is None:
            db.execute("UPDATE attempts SET first_wrong_note = ? WHERE id = ?", (text, attempt_id))
        db.execute(
            "INSERT INTO notes (attempt_id, at, text) VALUES (?, ?, ?)",
            (attempt_id, now.isoformat(), text),
        )

    def mark_check_error(self, check_id: int, reason: str, wall_s: float) -> None:
        with self.transaction() as db:
            db.execute(
                "UPDATE checks SET outcome = 'error', reason = ?, wall_s = ? WHERE id = ?",
                (reason, wall_s, check_id),
            )

    def open_reference(self, attempt_id: int, now: datetime) -> None:
        with self.transaction() as db:
            db.execute(
                "UPDATE attempts SET reference_opened_at = coalesce(reference_opened_at, ?)"
                " WHERE id = ?",
                (now.isoformat(), attempt_id),
            )
