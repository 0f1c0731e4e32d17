"""What each command does to the practice record: start an attempt, check it, link a
repair, reveal the reference, read what is due. Prints nothing: each operation returns what
happened (a `Started`, a `Checked`, ...) and the views put it into words."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TypedDict

from .errors import RefusedError, UsageError
from .items import item_named
from .sampler import history_of
from .stages import Mechanism, starting_artifact, unit_named, units
from .store import (
    STORE_NAME,
    Attempt,
    Review,
    StageRecord,
    Store,
    StoreError,
)
from .verdicts import StageVerdict, stage_verdicts

Clock = Callable[[], datetime]


class Limits(TypedDict, total=False):
    """The grader's protection options a check may override (`run_stage`'s keywords)."""

    timeout: float
    memory_limit: int
    workers: int


def install_hint(module: str) -> str:
    """How to install one of this project's packages that a suite needs."""
    return (
        f"the contract suites need this project's packages installed: `pip install"
        f' "packages/{module}[test]"` from the checkout (or run `nox -s practice -- check`,'
        " which installs them)"
    )


@dataclass(frozen=True)
class Started:
    """A new attempt: its file, what it starts from, the check it repairs for."""

    mechanism: Mechanism
    number: int
    path: Path
    archived: Path | None  # where an earlier file at `path` went, relative to the home
    from_artifact: bool  # a debug case: its supplied broken file under the header
    repair_for: Attempt | None  # the attempt whose failed check this drill repairs


@dataclass(frozen=True)
class Checked:
    """A recorded check: the attempt before and after, each stage's verdict, and what the
    record now holds for what comes next."""

    before: Attempt
    after: Attempt
    mechanism: Mechanism
    verdicts: list[StageVerdict]
    spent: dict[int, float]  # seconds on each stage's clock when the check was told
    wall_s: float
    decide: bool
    ledger_filled: bool
    unanswered: int  # a finished drill's probes without an answer
    scheduled: list[Review]  # the re-solves a decided miss scheduled
    resume: Attempt | None  # the active attempt a passing repair drill resumes
    resume_unit: Mechanism | None
    pending: Review | None  # the item's next pending re-solve

    @property
    def owner(self) -> str | None:
        return self.verdicts[-1].owner

    @property
    def passed(self) -> bool:
        return self.verdicts[-1].passed

    @property
    def decided(self) -> bool:
        """This check recorded the attempt's first wrong decision."""
        return bool(
            self.owner and self.before.first_wrong_owner is None and self.after.first_wrong_owner
        )


def _spent(record: StageRecord | None, now: datetime) -> float:
    return record.spent(now) if record else 0.0


class Workbench:
    """One home folder, its store, the checkout whose suites grade, and a clock."""

    def __init__(self, home: Path, root: Path | None, clock: Clock) -> None:
        self.home = home
        self.root = root
        self.clock = clock
        self.store = Store(home / STORE_NAME)

    def close(self) -> None:
        self.store.close()

    # -- picking an attempt
    def current(self, name: str | None) -> Attempt:
        package = item_named(name).package if name else None
        active = self.store.active(package)
        if not active:
            hint = f"start {package}" if package else "start MECH"
            raise RefusedError(
                f"no attempt in progress{' at ' + package if package else ''}: `{hint}`"
            )
        return max(active, key=lambda a: a.started_at)

    def to_check(self, name: str | None) -> Attempt:
        """The attempt in progress; or, named, a finished drill whose probes await answers."""
        unit = item_named(name) if name else None
        if unit and unit.drill and not self.store.active(unit.package):
            done = self.store.attempts(unit.package)
            if done and done[-1].status == "done":
                return done[-1]
        return self.current(name)

    def unit_of(self, attempt: Attempt) -> Mechanism:
        """The unit an attempt of the store is at; a row naming an item or a stage this
        version does not have is a damaged store (one line), never a KeyError."""
        unit = units().get(attempt.mechanism)
        if unit is None:
            raise self.store.damaged(
                f"attempt {attempt.id} is at {attempt.mechanism!r}, which this gptlab-practice"
                " does not know"
            )
        if not 1 <= attempt.stage <= len(unit.stages):
            raise self.store.damaged(
                f"{unit.package} attempt {attempt.number} is at stage {attempt.stage}, and"
                f" {unit.package} has {len(unit.stages)}"
            )
        return unit

    # -- start
    def start(
        self, mechanism: Mechanism, new: bool, repair: tuple[int, int] | None = None
    ) -> Started:
        """Write the attempt's file (its header, a debug case's artifact) and record it."""
        from .grader import attempt_filename, graded_names
        from .sheet import archive, attempt_header

        path = self.home / attempt_filename(mechanism)
        active = self.store.active(mechanism.package)
        recorded = {a.file for a in self.store.attempts()}
        unrecorded = path.exists() and str(path) not in recorded
        if (active or unrecorded) and not new:
            what = (
                f"attempt {active[-1].number} at {mechanism.package} is in progress (stage "
                f"{active[-1].stage}/{active[-1].stage_count})"
                if active
                else f"{path} exists and is not a recorded attempt"
            )
            raise RefusedError(
                f"{what}: go on with `check`, or `start {mechanism.package} --new` "
                "(the file is archived, never deleted)"
            )
        artifact = self._artifact(mechanism)
        now = self.clock()
        archived = archive(path, now).relative_to(self.home) if path.exists() else None
        number = len(self.store.attempts(mechanism.package)) + 1
        self.home.mkdir(parents=True, exist_ok=True)
        header = attempt_header(mechanism, graded_names(mechanism), number, now)
        path.write_text(header + (f"\n{artifact}" if artifact else ""), encoding="utf-8")
        link = repair if repair is not None else self._repair_link(mechanism)
        self.store.start_attempt(
            mechanism.package,
            path,
            now,
            mechanism.stage(1).minutes,
            len(mechanism.stages),
            kind="drill" if mechanism.drill else "mechanism",
            started_from="artifact" if artifact else "empty",
            repair=link,
        )
        sent = self.store.attempt(link[0]) if link else None
        return Started(mechanism, number, path, archived, bool(artifact), sent)

    def _artifact(self, mechanism: Mechanism) -> str:
        """A debug drill's supplied broken file (its text), else ""."""
        supplied = starting_artifact(mechanism)
        if supplied is None:
            return ""
        if not supplied.is_file():
            raise RefusedError(
                f"{mechanism.package} starts from a supplied artifact that is not installed yet"
                f" ({supplied})"
            )
        return supplied.read_text(encoding="utf-8")

    def _untouched_artifact(self, mechanism: Mechanism, text: str) -> bool:
        """A debug drill's file still holding only the header and the supplied artifact."""
        supplied = starting_artifact(mechanism)
        if supplied is None or not supplied.is_file():
            return False
        code = "\n".join(line for line in text.splitlines() if not line.startswith("#"))
        artifact = supplied.read_text(encoding="utf-8").splitlines()
        return (
            code.strip() == "\n".join(line for line in artifact if not line.startswith("#")).strip()
        )

    def _repair_link(self, unit: Mechanism) -> tuple[int, int] | None:
        """(attempt, check) when a drill is started as the repair an active attempt's last
        failed check routes to, else None."""
        from .grader import repair_drills

        if unit.drill is None:
            return None
        for attempt in sorted(self.store.active(), key=lambda a: a.started_at, reverse=True):
            if attempt.mechanism == unit.package:
                continue
            checks = self.store.checks(attempt.id)
            last = checks[-1] if checks else None
            if (
                last
                and last.failed_owner
                and unit.package in repair_drills(last.failed_owner, attempt.mechanism)
            ):
                return attempt.id, last.id
        return None

    # -- check
    def check(
        self,
        name: str | None,
        every: bool,
        note: str | None,
        limits: Limits,
        *,
        decide: bool = True,
    ) -> Checked:
        """Grade the current stage (every later one too with `every`) and record it.

        `decide`: whether a routed failure may record the first wrong decision (and its
        re-solves). The command always decides; `watch` decides only once the stage's budget
        has run out (a save is not a decision). Everything that can refuse is checked before
        the check's `running` row is written.
        """
        attempt = self.to_check(name)
        mechanism = self.unit_of(attempt)
        path = Path(attempt.file)
        if not path.is_file():
            raise RefusedError(
                f"{path}: the attempt file is missing (moved, renamed or deleted): put it back,"
                f" or begin again with `start {mechanism.package} --new`"
            )
        if self.root is None:
            raise UsageError("no gptlab checkout found")
        first = attempt.stage
        last = len(mechanism.stages) if every else first
        self._require_suites(mechanism, last)

        from .grader import run_stage

        # A `running` row first: a check killed half-way stays visible as interrupted.
        check_id = self.store.begin_check(attempt.id, first, self.clock())
        try:
            run = run_stage(self.root, mechanism, last, path, **limits)
            verdicts = stage_verdicts(mechanism, run, first, last)
            self._record(check_id, attempt, mechanism, verdicts, run.wall_s, note, decide)
        except KeyboardInterrupt:
            self.store.mark_check_error(check_id, "interrupted", 0.0)
            raise
        except StoreError:
            raise
        except Exception as error:  # the row says why instead of staying `running`
            self.store.mark_check_error(check_id, f"{type(error).__name__}: {error}"[:400], 0.0)
            raise
        return self._checked(attempt, mechanism, verdicts, run.wall_s, decide)

    @staticmethod
    def _require_suites(mechanism: Mechanism, stage: int) -> None:
        """Refuse, before anything is recorded, a check whose suites' packages are not
        installed (practice alone installs the testkit and the drills, not the mechanisms)."""
        if mechanism.drill is not None:
            return
        for package in mechanism.packages_through(stage):
            if importlib.util.find_spec(package) is None:
                raise RefusedError(f"{package} is not installed: {install_hint(package)}")

    def _record(
        self,
        check_id: int,
        attempt: Attempt,
        mechanism: Mechanism,
        verdicts: list[StageVerdict],
        wall_s: float,
        note: str | None,
        decide: bool,
    ) -> None:
        from .schedule import after_miss, is_transfer_case
        from .sheet import ledger_filled, probe_answers

        now = self.clock()
        drawn = history_of(self.store) if is_transfer_case(mechanism.drill) else None
        text = Path(attempt.file).read_text(encoding="utf-8", errors="replace")
        probes = mechanism.drill.probes if mechanism.drill else ()
        self.store.finish_check(
            check_id,
            [v.row() for v in verdicts],
            wall_s,
            now,
            {s.number: s.minutes for s in mechanism.stages},
            note,
            ledger_filled=ledger_filled(text),
            answers=probe_answers(text, probes),
            on_miss=after_miss(mechanism, now.date(), drawn),
            decision=decide and not self._untouched_artifact(mechanism, text),
        )

    def _checked(
        self,
        attempt: Attempt,
        mechanism: Mechanism,
        verdicts: list[StageVerdict],
        wall_s: float,
        decide: bool,
    ) -> Checked:
        """What the record holds after a check, for the views to tell."""
        from .sheet import ledger_filled, probe_answers

        now = self.clock()
        records = {r.stage: r for r in self.store.stages(attempt.id)}
        spent = {
            v.stage: records[v.stage].spent(now) if v.stage in records else 0.0 for v in verdicts
        }
        recorded = self.store.attempt(attempt.id)
        text = Path(attempt.file).read_text(encoding="utf-8", errors="replace")
        probes = mechanism.drill.probes if mechanism.drill else ()
        scheduled = [r for r in self.store.reviews() if r.miss_attempt_id == attempt.id]
        resume = None
        if recorded.status == "done" and recorded.repair_of is not None:
            sent = self.store.attempt(recorded.repair_of)
            resume = sent if sent.status == "active" else None
        return Checked(
            before=attempt,
            after=recorded,
            mechanism=mechanism,
            verdicts=verdicts,
            spent=spent,
            wall_s=wall_s,
            decide=decide,
            ledger_filled=ledger_filled(text),
            unanswered=len(probes) - len(probe_answers(text, probes)),
            scheduled=scheduled,
            resume=resume,
            resume_unit=self.unit_of(resume) if resume else None,
            pending=self.pending(mechanism.package),
        )

    # -- reveal, repair, due
    def reveal(self, name: str | None) -> tuple[Attempt, Mechanism]:
        """Mark the latest attempt (at `name`) as having opened the reference."""
        package = item_named(name).package if name else None
        attempts = self.store.active(package) or self.store.attempts(package)
        if not attempts:
            raise RefusedError("no attempt to reveal the reference for: `start MECH` first")
        attempt = max(attempts, key=lambda a: a.started_at)
        mechanism = self.unit_of(attempt)
        self.store.open_reference(attempt.id, self.clock())
        return attempt, mechanism

    def repair_plan(self, name: str | None) -> tuple[str, tuple[int, int]]:
        """The first drill that owns the current attempt's last failure, and the (attempt,
        check) link a repair started there records."""
        from gptlab_testkit import no_owning_drill

        from .grader import related_drills, repair_drills

        attempt = self.current(name)
        checks = self.store.checks(attempt.id)
        last = checks[-1] if checks else None
        if last is None or last.outcome != "failed" or not last.failed_owner:
            raise RefusedError(
                f"{attempt.mechanism} attempt {attempt.number}: its last check did not fail with"
                " a routed owner; nothing to repair (`check` first)"
            )
        drills = repair_drills(last.failed_owner, attempt.mechanism) or self.owner_drill(attempt)
        if not drills:
            where = f"{attempt.mechanism} stage {last.stage}"
            related = related_drills(last.failed_owner)
            raise RefusedError(
                f"{last.failed_owner}: {no_owning_drill(where, related)}"
                if related
                else f"no drill owns {last.failed_owner}: repair it in {where} itself"
            )
        return drills[0], (attempt.id, last.id)

    def owner_drill(self, attempt: Attempt) -> tuple[str, ...]:
        """A transfer case's canonical owner, where it is a drill: the kit repairs a failed
        case there (a model build owner is started by name, not as a repair)."""
        case = self.unit_of(attempt).drill
        owner = unit_named(case.owner) if case and case.id.startswith("PT") and case.owner else None
        return (owner.package,) if owner is not None and owner.drill is not None else ()

    def pending(self, item: str) -> Review | None:
        """An item's next pending re-solve."""
        pending = [r for r in self.store.reviews(item) if r.status == "pending"]
        return pending[0] if pending else None

    def due(self, today: str) -> tuple[list[Review], Review | None]:
        """Pending re-solves due by `today`, oldest first; and, none due, the next ahead."""
        pending = [r for r in self.store.reviews() if r.status == "pending"]
        now_due = [r for r in pending if r.due_day <= today]
        ahead = None if now_due else min(pending, key=lambda r: r.due_day, default=None)
        return now_due, ahead
