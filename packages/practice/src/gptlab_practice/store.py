"""The practice record: attempts, stages, checks and notes in SQLite (`practice.sqlite3`).

stdlib sqlite3, the schema version in `PRAGMA user_version`, every write in one
`BEGIN IMMEDIATE` transaction (all of it lands or none of it). Rows are never
deleted: a new attempt leaves the old one as it was (status `abandoned`), and a
check that never finished stays visible as `running` (shown as interrupted).

The file is made by the first write: until then the record is an empty in-memory one,
so a command that only reads, or fails, leaves an empty home without a store. Whatever
goes wrong with the file (damaged, read-only, locked, newer, a row that cannot be read)
is a `StoreError`: one line naming the file and what to do.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")

SCHEMA_VERSION = 3
STORE_NAME = "practice.sqlite3"
LOCK_WAIT_S = 2.0  # how long a command waits for another one's write before saying "locked"

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

# Schema 2 (issue 35): drills and the repair link, paused stage clocks, the ledger at
# each check, probe answers, and the kit's re-solve schedule. A v1 store gains these in
# one transaction; every v1 row is kept (its new columns take their defaults).
_V2 = """
ALTER TABLE attempts ADD COLUMN kind TEXT NOT NULL DEFAULT 'mechanism'
    CHECK (kind IN ('mechanism', 'drill'));
ALTER TABLE attempts ADD COLUMN started_from TEXT NOT NULL DEFAULT 'empty'
    CHECK (started_from IN ('empty', 'artifact'));
ALTER TABLE attempts ADD COLUMN repair_of INTEGER REFERENCES attempts(id);
ALTER TABLE attempts ADD COLUMN repair_check INTEGER REFERENCES checks(id);
ALTER TABLE stages ADD COLUMN paused_s REAL NOT NULL DEFAULT 0;
ALTER TABLE checks ADD COLUMN ledger_filled INTEGER;
CREATE TABLE probe_answers (
    check_id INTEGER NOT NULL REFERENCES checks(id),
    number INTEGER NOT NULL,
    question TEXT NOT NULL,
    answer TEXT NOT NULL,
    PRIMARY KEY (check_id, number)
);
CREATE TABLE reviews (
    id INTEGER PRIMARY KEY,
    item TEXT NOT NULL,                -- a mechanism (tinygpt) or a drill id (P19)
    step TEXT NOT NULL,                -- same day, next day, 3 days, a week, owner, transfer
    due_day TEXT NOT NULL,
    miss_attempt_id INTEGER NOT NULL REFERENCES attempts(id),
    status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'done', 'superseded')),
    done_attempt_id INTEGER REFERENCES attempts(id),
    done_day TEXT
);
"""

# Schema 3 (the route): the learner's own 0-3 scores where a machine cannot see (the
# diagnostic's explain-aloud items), and the route the diagnostic picked (fixed once set).
_V3 = """
CREATE TABLE self_scores (
    id INTEGER PRIMARY KEY,
    at TEXT NOT NULL,
    item TEXT NOT NULL,                -- a self-scored item's key (kv_capacity)
    score INTEGER NOT NULL CHECK (score BETWEEN 0 AND 4)
);
CREATE TABLE routes (
    id INTEGER PRIMARY KEY,
    at TEXT NOT NULL,
    day TEXT NOT NULL,                 -- the route's day 1
    route TEXT NOT NULL,               -- 14-day, intermediate, 7-day
    scores TEXT NOT NULL,              -- dimension=score, comma-separated, in the kit's order
    protected TEXT NOT NULL,           -- the protected days, comma-separated (d1,d3,d4)
    m03_branch TEXT NOT NULL           -- advanced or simple, frozen from P19 at its deadline
);
CREATE TABLE mocks (
    id INTEGER PRIMARY KEY,
    attempt_id INTEGER NOT NULL REFERENCES attempts(id),
    prompt TEXT NOT NULL,              -- the drawn item (PT01, P19)
    kind TEXT NOT NULL,                -- PT or P
    owner TEXT NOT NULL,               -- its canonical owner
    why TEXT NOT NULL,                 -- the sampler's reasons for the draw
    minutes INTEGER NOT NULL,          -- the declared time, within 60
    deadline TEXT NOT NULL,
    frozen_file TEXT,                  -- the copy taken at the deadline (graded, never edited)
    frozen_at TEXT,
    tests_passed INTEGER,
    tests_run INTEGER,
    first_wrong TEXT,                  -- the frozen grade's first failing owner
    evidence TEXT,                     -- the machine's evidence per rubric dimension
    scores TEXT                        -- the learner's 0-4 per dimension, dimension=score,...
);
"""


# Attempts with their number among the same mechanism's (what the learner sees).
_NUMBERED = (
    "SELECT * FROM (SELECT *, row_number() OVER (PARTITION BY mechanism ORDER BY id) AS number"
    " FROM attempts)"
)


class StoreError(Exception):
    """The store cannot be used (locked, corrupt, or from a newer version); names the file."""


MOVE_ASIDE = "move it aside (the next command starts a new record) or pass another --home"


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
    kind: str = "mechanism"  # or "drill"
    started_from: str = "empty"  # or "artifact" (a debug drill's supplied broken file)
    repair_of: int | None = None  # the attempt whose failed check sent the learner here
    repair_check: int | None = None


@dataclass(frozen=True)
class StageRecord:
    attempt_id: int
    stage: int
    minutes: int
    started_at: datetime
    passed_at: datetime | None
    paused_s: float = 0.0  # time spent in repair drills while the stage was open

    def spent(self, now: datetime) -> float:
        """Seconds on the stage's clock at `now` (or when it passed), drills not counted."""
        end = self.passed_at or now
        return (end - self.started_at).total_seconds() - self.paused_s

    @property
    def seconds(self) -> float | None:
        if self.passed_at is None:
            return None
        return self.spent(self.passed_at)


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
    ledger_filled: bool | None = None  # None: not recorded (a schema-1 check)


@dataclass(frozen=True)
class Review:
    """A scheduled re-solve of an item after a miss (the kit's spacing)."""

    id: int
    item: str
    step: str
    due_day: str
    miss_attempt_id: int
    status: str
    done_attempt_id: int | None
    done_day: str | None


@dataclass(frozen=True)
class PlannedReview:
    """A re-solve to schedule when a check records a miss: (item, step, due day)."""

    item: str
    step: str
    due_day: str


@dataclass(frozen=True)
class RouteRecord:
    """The route a diagnostic picked: its day 1, scores, protected days and M03 branch."""

    at: datetime
    day: str
    route: str
    scores: tuple[tuple[str, int], ...]
    protected: tuple[str, ...]
    m03_branch: str


CHECK_SCORE = "check:"  # a self score given with a check: check:<check id>:<rubric key>


@dataclass(frozen=True)
class MockRecord:
    """A timed mock: the draw, its deadline, the frozen copy and what its grade saw."""

    attempt_id: int
    prompt: str
    kind: str
    owner: str
    why: str
    minutes: int
    deadline: datetime
    id: int = 0
    frozen_file: str | None = None
    frozen_at: datetime | None = None
    tests_passed: int | None = None
    tests_run: int | None = None
    first_wrong: str | None = None
    evidence: str | None = None
    scores: str | None = None

    @property
    def abandoned(self) -> bool:
        """Closed by `mock --abandon`: stopped with no copy taken."""
        return self.frozen_at is not None and self.frozen_file is None


def _mock(r: sqlite3.Row) -> MockRecord:
    return MockRecord(
        attempt_id=int(r["attempt_id"]),
        prompt=str(r["prompt"]),
        kind=str(r["kind"]),
        owner=str(r["owner"]),
        why=str(r["why"]),
        minutes=int(r["minutes"]),
        deadline=_instant(r["deadline"]),
        id=int(r["id"]),
        frozen_file=r["frozen_file"],
        frozen_at=_time(r["frozen_at"]),
        tests_passed=r["tests_passed"],
        tests_run=r["tests_run"],
        first_wrong=r["first_wrong"],
        evidence=r["evidence"],
        scores=r["scores"],
    )


def _route(r: sqlite3.Row) -> RouteRecord:
    pairs = [part.split("=") for part in str(r["scores"]).split(",") if part]
    return RouteRecord(
        at=_instant(r["at"]),
        day=str(r["day"]),
        route=str(r["route"]),
        scores=tuple((key, int(value)) for key, value in pairs),
        protected=tuple(p for p in str(r["protected"]).split(",") if p),
        m03_branch=str(r["m03_branch"]),
    )


def _instant(value: object) -> datetime:
    """A stored timestamp: ISO 8601 with its offset (a naive one cannot meet the clock's)."""
    if not isinstance(value, str):
        raise ValueError(f"timestamp {value!r} is not text")
    moment = datetime.fromisoformat(value)
    if moment.tzinfo is None:
        raise ValueError(f"timestamp {value!r} has no UTC offset")
    return moment


def _time(value: object) -> datetime | None:
    return _instant(value) if value is not None else None


def _attempt(row: sqlite3.Row) -> Attempt:
    return Attempt(
        id=int(row["id"]),
        number=int(row["number"]),
        mechanism=str(row["mechanism"]),
        file=str(row["file"]),
        started_at=_instant(row["started_at"]),
        day=str(row["day"]),
        stage=int(row["stage"]),
        stage_count=int(row["stage_count"]),
        status=str(row["status"]),
        finished_at=_time(row["finished_at"]),
        reference_opened_at=_time(row["reference_opened_at"]),
        first_wrong_owner=row["first_wrong_owner"],
        first_wrong_stage=row["first_wrong_stage"],
        first_wrong_note=row["first_wrong_note"],
        kind=row["kind"],
        started_from=row["started_from"],
        repair_of=row["repair_of"],
        repair_check=row["repair_check"],
    )


def _stage_record(r: sqlite3.Row) -> StageRecord:
    return StageRecord(
        int(r["attempt_id"]),
        int(r["stage"]),
        int(r["minutes"]),
        _instant(r["started_at"]),
        _time(r["passed_at"]),
        float(r["paused_s"]),
    )


def _check_record(r: sqlite3.Row) -> CheckRecord:
    return CheckRecord(
        int(r["id"]),
        int(r["attempt_id"]),
        int(r["stage"]),
        _instant(r["at"]),
        str(r["outcome"]),
        int(r["tests_passed"]),
        int(r["tests_failed"]),
        r["failed_owner"],
        str(r["reason"]),
        r["wall_s"],
        None if r["ledger_filled"] is None else bool(r["ledger_filled"]),
    )


def _review(r: sqlite3.Row) -> Review:
    return Review(
        int(r["id"]),
        str(r["item"]),
        str(r["step"]),
        str(r["due_day"]),
        int(r["miss_attempt_id"]),
        str(r["status"]),
        r["done_attempt_id"],
        r["done_day"],
    )


class Store:
    """One practice home's record. Use as a context manager (closes the connection)."""

    def __init__(self, path: Path, *, timeout_s: float | None = None) -> None:
        self.path = path
        self._timeout_s = LOCK_WAIT_S if timeout_s is None else timeout_s
        self._on_file = False
        if path.exists() or path.is_symlink():
            self._db = self._open_file()
        else:  # nothing to read yet: an empty record in memory until the first write
            self._db = sqlite3.connect(":memory:", isolation_level=None)
            self._db.row_factory = sqlite3.Row
            self._script(_SCHEMA + ";" + _V2 + ";" + _V3)

    def _open_file(self) -> sqlite3.Connection:
        """Connect to the file (made here if absent) and bring its schema up to date; on
        failure the store is left as it was (in memory, or not open) and a StoreError says why."""
        memory: sqlite3.Connection | None = getattr(self, "_db", None)
        db = None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(self.path, timeout=self._timeout_s, isolation_level=None)
            db.row_factory = sqlite3.Row
            db.execute("PRAGMA foreign_keys = ON")
            self._db, self._on_file = db, True  # the migration writes through self._db
            self._migrate()
            return db
        except BaseException as error:
            self._close_quietly(db)
            if memory is not None:  # still the in-memory record: nothing was written
                self._db, self._on_file = memory, False
            if isinstance(error, sqlite3.Error):
                raise self._error(error) from None
            if isinstance(error, OSError):
                raise StoreError(
                    f"{self.path}: cannot open the practice store ({error.strerror or error}):"
                    " check the folder's permissions, or pass another --home"
                ) from None
            raise

    @staticmethod
    def _close_quietly(db: sqlite3.Connection | None) -> None:
        if db is not None:
            db.close()

    def _error(self, error: sqlite3.Error) -> StoreError:
        text = str(error)
        if "locked" in text or "busy" in text:
            return StoreError(
                f"{self.path}: the practice store is locked by another process "
                "(another check still running?); try again when it has finished"
            )
        if "readonly" in text or "read-only" in text:
            return StoreError(
                f"{self.path}: the practice store cannot be written (a read-only file or "
                "folder); nothing was recorded: make both writable, or pass another --home"
            )
        if "unable to open" in text:
            return StoreError(
                f"{self.path}: the practice store cannot be opened ({text}): check that it is"
                " a file you may read and write, or pass another --home"
            )
        return StoreError(
            f"{self.path}: not a readable practice store ({text}); it was left untouched: "
            f"{MOVE_ASIDE}"
        )

    def damaged(self, what: str) -> StoreError:
        """A row the record holds that this version cannot use (named by `what`)."""
        return StoreError(
            f"{self.path}: the practice store is damaged ({what}); it was left untouched: "
            f"{MOVE_ASIDE}"
        )

    def _migrate(self) -> None:
        version = int(self._db.execute("PRAGMA user_version").fetchone()[0])
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"{self.path}: written by a newer gptlab-practice (schema {version}, "
                f"this one reads {SCHEMA_VERSION}); left untouched"
            )
        if version == SCHEMA_VERSION:
            return
        with self.transaction():  # creation or migration: all of it or none of it
            # Read again under the write lock: another process may have migrated meanwhile.
            version = int(self._db.execute("PRAGMA user_version").fetchone()[0])
            if version == 0:
                tables = self._db.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
                if tables:
                    raise StoreError(
                        f"{self.path}: an SQLite file that is not a practice store; it was left"
                        f" untouched: {MOVE_ASIDE}"
                    )
                self._script(_SCHEMA)
            if version < 2:
                self._script(_V2)
            if version < 3:
                self._script(_V3)
            self._db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    def _script(self, script: str) -> None:
        for statement in script.split(";"):
            if statement.strip():
                self._db.execute(statement)

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """Every write: all of it or none of it; a lock held elsewhere is a StoreError, and so
        is any database error inside (the transaction is rolled back first)."""
        if not self._on_file:  # the first write makes the file
            memory, self._db = self._db, self._open_file()
            memory.close()
        try:
            self._db.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as error:
            raise self._error(error) from None
        try:
            yield self._db
        except BaseException as error:
            self._rollback()
            if isinstance(error, sqlite3.Error):
                raise self._error(error) from None
            if isinstance(error, (KeyError, IndexError, TypeError, ValueError)):
                raise self.damaged(f"{type(error).__name__}: {error}") from None
            raise
        else:
            try:
                self._db.execute("COMMIT")
            except sqlite3.Error as error:
                self._rollback()
                raise self._error(error) from None

    def _rollback(self) -> None:
        # SQLite may have rolled back on its own already (a full disk, an I/O error).
        if self._db.in_transaction:
            with suppress(sqlite3.Error):
                self._db.execute("ROLLBACK")

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _read(self, sql: str, *args: object) -> list[sqlite3.Row]:
        try:
            return list(self._db.execute(sql, args))
        except sqlite3.Error as error:
            raise self._error(error) from None

    def _rows(
        self, table: str, rows: list[sqlite3.Row], make: Callable[[sqlite3.Row], T]
    ) -> list[T]:
        """Rows as records; a row this version cannot read is a StoreError naming its table."""
        try:
            return [make(row) for row in rows]
        except (KeyError, IndexError, TypeError, ValueError) as error:
            raise self.damaged(f"a row of {table}: {error}") from None

    # -- reading
    def attempts(self, mechanism: str | None = None) -> list[Attempt]:
        if mechanism is None:
            return self._rows("attempts", self._read(f"{_NUMBERED} ORDER BY id"), _attempt)
        rows = self._read(f"{_NUMBERED} WHERE mechanism = ? ORDER BY id", mechanism)
        return self._rows("attempts", rows, _attempt)

    def attempt(self, attempt_id: int) -> Attempt:
        found = self._rows(
            "attempts", self._read(f"{_NUMBERED} WHERE id = ?", attempt_id), _attempt
        )
        if not found:
            raise self.damaged(f"attempt {attempt_id} is referred to but missing")
        return found[0]

    def active(self, mechanism: str | None = None) -> list[Attempt]:
        return [a for a in self.attempts(mechanism) if a.status == "active"]

    def stages(self, attempt_id: int) -> list[StageRecord]:
        rows = self._read("SELECT * FROM stages WHERE attempt_id = ? ORDER BY stage", attempt_id)
        return self._rows("stages", rows, _stage_record)

    def checks(self, attempt_id: int) -> list[CheckRecord]:
        rows = self._read("SELECT * FROM checks WHERE attempt_id = ? ORDER BY id", attempt_id)
        return self._rows("checks", rows, _check_record)

    def probe_answers(self, check_id: int) -> list[tuple[int, str, str]]:
        rows = self._read(
            "SELECT number, question, answer FROM probe_answers WHERE check_id = ? ORDER BY number",
            check_id,
        )
        return self._rows(
            "probe_answers",
            rows,
            lambda r: (int(r["number"]), str(r["question"]), str(r["answer"])),
        )

    def reviews(self, item: str | None = None) -> list[Review]:
        where, args = ("WHERE item = ?", (item,)) if item else ("", ())
        rows = self._read(f"SELECT * FROM reviews {where} ORDER BY due_day, id", *args)
        return self._rows("reviews", rows, _review)

    def notes(self, attempt_id: int) -> list[tuple[datetime, str]]:
        rows = self._read("SELECT at, text FROM notes WHERE attempt_id = ? ORDER BY id", attempt_id)
        return self._rows("notes", rows, lambda r: (_instant(r["at"]), str(r["text"])))

    # -- writing (each one transaction)
    def start_attempt(
        self,
        mechanism: str,
        file: Path,
        now: datetime,
        first_minutes: int,
        stage_count: int,
        *,
        kind: str = "mechanism",
        started_from: str = "empty",
        repair: tuple[int, int] | None = None,  # (attempt, check) that sent the learner here
    ) -> int:
        with self.transaction() as db:
            db.execute(
                "UPDATE attempts SET status = 'abandoned'"
                " WHERE mechanism = ? AND status = 'active'",
                (mechanism,),
            )
            repair_of, repair_check = repair or (None, None)
            cursor = db.execute(
                "INSERT INTO attempts (mechanism, file, started_at, day, stage, stage_count,"
                " status, kind, started_from, repair_of, repair_check)"
                " VALUES (?, ?, ?, ?, 1, ?, 'active', ?, ?, ?, ?)",
                (
                    mechanism,
                    str(file),
                    now.isoformat(),
                    now.date().isoformat(),
                    stage_count,
                    kind,
                    started_from,
                    repair_of,
                    repair_check,
                ),
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
        *,
        ledger_filled: bool | None = None,
        answers: tuple[tuple[int, str, str], ...] = (),
        on_miss: tuple[PlannedReview, ...] = (),
        decision: bool = True,
    ) -> None:
        """Record a check's verdict per stage, advance the attempt, note a first wrong decision.

        `outcomes`: (stage, outcome, passed, failed, failed owner, reason) in stage order;
        the first updates the `running` row, the rest are rows of their own (`check --all`).
        `next_minutes`: the budget of each stage that a pass opens. `answers`: the probe
        answers (number, question, answer), kept with a passing check. `on_miss`: the
        re-solves a first wrong decision schedules (recorded only when this check makes it).
        `decision`: False when the graded file is not yet the learner's (a debug drill's
        untouched artifact): a failure then records no first wrong decision.
        """
        with self.transaction() as db:
            attempt_id = int(
                db.execute("SELECT attempt_id FROM checks WHERE id = ?", (check_id,)).fetchone()[0]
            )
            attempt = _attempt(db.execute(f"{_NUMBERED} WHERE id = ?", (attempt_id,)).fetchone())
            ledger = None if ledger_filled is None else int(ledger_filled)
            for index, (stage, outcome, passed, failed, owner, reason) in enumerate(outcomes):
                values = (stage, outcome, passed, failed, owner, reason, wall_s, ledger)
                if index == 0:
                    db.execute(
                        "UPDATE checks SET stage = ?, outcome = ?, tests_passed = ?,"
                        " tests_failed = ?, failed_owner = ?, reason = ?, wall_s = ?,"
                        " ledger_filled = ? WHERE id = ?",
                        (*values, check_id),
                    )
                else:
                    db.execute(
                        "INSERT INTO checks (attempt_id, at, stage, outcome, tests_passed,"
                        " tests_failed, failed_owner, reason, wall_s, ledger_filled)"
                        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        (attempt_id, now.isoformat(), *values),
                    )
                if outcome == "passed":
                    self._pass_stage(db, attempt, stage, now, next_minutes)
                elif owner and decision and attempt.first_wrong_owner is None:
                    db.execute(
                        "UPDATE attempts SET first_wrong_owner = ?, first_wrong_stage = ?"
                        " WHERE id = ?",
                        (owner, stage, attempt_id),
                    )
                    self._schedule(db, attempt_id, on_miss)
            if outcomes and outcomes[-1][1] == "passed":
                db.executemany(
                    "INSERT INTO probe_answers (check_id, number, question, answer)"
                    " VALUES (?, ?, ?, ?)",
                    [(check_id, *answer) for answer in answers],
                )
            if note:
                self._add_note(db, attempt_id, note, now)

    def _schedule(
        self, db: sqlite3.Connection, miss: int, planned: tuple[PlannedReview, ...]
    ) -> None:
        """A miss replaces the pending re-solves of the same items with a fresh schedule."""
        for item in {p.item for p in planned}:
            db.execute(
                "UPDATE reviews SET status = 'superseded' WHERE item = ? AND status = 'pending'",
                (item,),
            )
        db.executemany(
            "INSERT INTO reviews (item, step, due_day, miss_attempt_id) VALUES (?, ?, ?, ?)",
            [(p.item, p.step, p.due_day, miss) for p in planned],
        )

    def _complete_review(self, db: sqlite3.Connection, attempt_id: int, now: datetime) -> None:
        """A clean finished attempt completes the oldest re-solve due by its start day.

        Clean: no first wrong decision, the reference closed. One re-solve per item a
        day; one started before its due day does not count (spacing is never faked);
        a same-day re-solve needs an unrelated task (another item, not a repair of the
        miss) between the miss and the re-solve.
        """
        attempt = _attempt(db.execute(f"{_NUMBERED} WHERE id = ?", (attempt_id,)).fetchone())
        if attempt.first_wrong_owner or attempt.reference_opened_at:
            return
        already = db.execute(
            "SELECT 1 FROM reviews WHERE item = ? AND status = 'done' AND done_day = ?",
            (attempt.mechanism, attempt.day),
        ).fetchone()
        if already:
            return
        review = db.execute(
            "SELECT * FROM reviews WHERE item = ? AND status = 'pending' AND due_day <= ?"
            " AND miss_attempt_id < ? ORDER BY due_day, id LIMIT 1",
            (attempt.mechanism, attempt.day, attempt.id),
        ).fetchone()
        if review is None:
            return
        if review["step"] == "same day" and review["due_day"] == attempt.day:
            unrelated = db.execute(
                "SELECT 1 FROM attempts WHERE id > ? AND id < ? AND mechanism != ?"
                " AND coalesce(repair_of, 0) != ?",
                (
                    review["miss_attempt_id"],
                    attempt.id,
                    attempt.mechanism,
                    review["miss_attempt_id"],
                ),
            ).fetchone()
            if not unrelated:
                return
        db.execute(
            "UPDATE reviews SET status = 'done', done_attempt_id = ?, done_day = ? WHERE id = ?",
            (attempt.id, attempt.day, review["id"]),
        )

    def _pass_stage(
        self,
        db: sqlite3.Connection,
        attempt: Attempt,
        stage: int,
        now: datetime,
        next_minutes: dict[int, int],
    ) -> None:
        if attempt.status != "active":  # a re-check of a finished attempt records answers only
            return
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
            self._complete_review(db, attempt.id, now)
            if attempt.repair_of is not None:  # the drill's time leaves the stage's clock
                db.execute(
                    "UPDATE stages SET paused_s = paused_s + ? WHERE attempt_id = ?"
                    " AND passed_at IS NULL",
                    ((now - attempt.started_at).total_seconds(), attempt.repair_of),
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

    def add_self_score(self, item: str, score: int, now: datetime) -> None:
        with self.transaction() as db:
            db.execute(
                "INSERT INTO self_scores (at, item, score) VALUES (?, ?, ?)",
                (now.isoformat(), item, score),
            )

    def add_check_scores(self, check_id: int, scores: dict[str, int], now: datetime) -> None:
        """The learner's own 0-4 rubric scores given with a check (kept as self scores under
        the check's key: `check:12:forward`)."""
        with self.transaction() as db:
            db.executemany(
                "INSERT INTO self_scores (at, item, score) VALUES (?, ?, ?)",
                [(now.isoformat(), f"{CHECK_SCORE}{check_id}:{k}", v) for k, v in scores.items()],
            )

    def check_scores(self, check_ids: list[int]) -> dict[str, int]:
        """The rubric scores given with these checks, later ones overriding earlier ones."""
        rows = self._read(
            "SELECT item, score FROM self_scores WHERE item LIKE ? ORDER BY id", f"{CHECK_SCORE}%"
        )
        found = self._rows("self_scores", rows, lambda r: (str(r["item"]), int(r["score"])))
        order = {check_id: i for i, check_id in enumerate(check_ids)}
        given: list[tuple[int, str, int]] = []
        for item, score in found:
            _, check, key = item.split(":", 2) if item.count(":") >= 2 else ("", "", "")
            if check.isdigit() and int(check) in order:
                given.append((order[int(check)], key, score))
        return {key: score for _, key, score in sorted(given, key=lambda g: g[0])}

    def self_scores(self) -> dict[str, int]:
        """Each self-scored item's latest score."""
        rows = self._read(
            "SELECT item, score FROM self_scores WHERE item NOT LIKE ? ORDER BY id",
            f"{CHECK_SCORE}%",
        )
        return dict(self._rows("self_scores", rows, lambda r: (str(r["item"]), int(r["score"]))))

    def set_route(self, route: RouteRecord) -> None:
        with self.transaction() as db:
            db.execute(
                "INSERT INTO routes (at, day, route, scores, protected, m03_branch)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (
                    route.at.isoformat(),
                    route.day,
                    route.route,
                    ",".join(f"{k}={v}" for k, v in route.scores),
                    ",".join(route.protected),
                    route.m03_branch,
                ),
            )

    def route(self) -> RouteRecord | None:
        """The route the diagnostic picked (the first one: it never changes)."""
        rows = self._read("SELECT * FROM routes ORDER BY id LIMIT 1")
        found = self._rows("routes", rows, _route)
        return found[0] if found else None

    def start_mock(self, mock: MockRecord) -> int:
        with self.transaction() as db:
            cursor = db.execute(
                "INSERT INTO mocks (attempt_id, prompt, kind, owner, why, minutes, deadline)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (mock.attempt_id, mock.prompt, mock.kind, mock.owner, mock.why, mock.minutes,
                 mock.deadline.isoformat()),
            )  # fmt: skip
        return int(cursor.lastrowid or 0)

    def freeze_mock(self, mock_id: int, frozen: Path, now: datetime) -> None:
        with self.transaction() as db:
            db.execute(
                "UPDATE mocks SET frozen_file = ?, frozen_at = ? WHERE id = ?",
                (str(frozen), now.isoformat(), mock_id),
            )

    def grade_mock(
        self, mock_id: int, passed: int, run: int, first_wrong: str | None, evidence: str
    ) -> None:
        with self.transaction() as db:
            db.execute(
                "UPDATE mocks SET tests_passed = ?, tests_run = ?, first_wrong = ?, evidence = ?"
                " WHERE id = ?",
                (passed, run, first_wrong, evidence, mock_id),
            )

    def abandon_mock(self, mock_id: int, now: datetime) -> None:
        """Stopped without a copy: frozen_at set, frozen_file left empty (abandoned)."""
        with self.transaction() as db:
            db.execute("UPDATE mocks SET frozen_at = ? WHERE id = ?", (now.isoformat(), mock_id))

    def score_mock(self, mock_id: int, scores: str) -> None:
        with self.transaction() as db:
            db.execute("UPDATE mocks SET scores = ? WHERE id = ?", (scores, mock_id))

    def mocks(self) -> list[MockRecord]:
        rows = self._read("SELECT * FROM mocks ORDER BY id")
        return self._rows("mocks", rows, _mock)

    def open_reference(self, attempt_id: int, now: datetime) -> None:
        with self.transaction() as db:
            db.execute(
                "UPDATE attempts SET reference_opened_at = coalesce(reference_opened_at, ?)"
                " WHERE id = ?",
                (now.isoformat(), attempt_id),
            )
