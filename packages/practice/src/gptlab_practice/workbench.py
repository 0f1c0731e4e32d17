"""What each command does to the practice record: start an attempt, check it (`checking`),
link a repair (`repairs`), reveal the reference, read what is due. Prints nothing: each
operation returns what happened (a `Started`, a `Checked`, ...) and the views put it into
words."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .branches import m03_target, names_m03
from .checking import Checked, CheckRun, Clock, Limits, install_hint, pending
from .errors import RefusedError
from .items import item_named
from .repairs import owner_drill, repair_link, repair_plan
from .stages import Mechanism, starting_artifact, units
from .store import STORE_NAME, Attempt, Review, Store

__all__ = ["Checked", "Clock", "Limits", "Started", "Workbench", "install_hint"]


@dataclass(frozen=True)
class Started:
    """A new attempt: its file, what it starts from, the check it repairs for."""

    mechanism: Mechanism
    number: int
    path: Path
    archived: Path | None  # where an earlier file at `path` went, relative to the home
    from_artifact: bool  # a debug case: its supplied broken file under the header
    repair_for: Attempt | None  # the attempt whose failed check this drill repairs


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
    def m03_branch(self) -> str | None:
        """M03's branch as the diagnostic froze it; None before a route is recorded."""
        route = self.store.route()
        return route.m03_branch if route is not None else None

    def item(self, name: str) -> Mechanism:
        """The unit a typed name means (`item_named`), `M03` on the recorded branch: the
        advanced one grades `cache_aware_modern`, the simple one (or none yet) the
        cache_aware_lm contract."""
        unit = item_named(name)  # an unknown name is answered before the store is read
        return units()[m03_target(self.m03_branch())] if names_m03(name) else unit

    def current(self, name: str | None) -> Attempt:
        package = self.item(name).package if name else None
        active = self.store.active(package)
        if not active:
            hint = f"start {package}" if package else "start MECH"
            raise RefusedError(
                f"no attempt in progress{' at ' + package if package else ''}: `{hint}`"
            )
        return max(active, key=lambda a: a.started_at)

    def to_check(self, name: str | None, scoring: bool = False) -> Attempt:
        """The attempt in progress; or, named, a finished drill whose probes await answers,
        or a finished model build the learner scores on the rubric (`scoring`)."""
        unit = self.item(name) if name else None
        finished_ok = unit is not None and (unit.drill or (scoring and unit.kit_name))
        if unit and finished_ok and not self.store.active(unit.package):
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
        link = repair if repair is not None else repair_link(self.store, mechanism)
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

    # -- check
    def check(
        self,
        name: str | None,
        every: bool,
        note: str | None,
        limits: Limits,
        *,
        decide: bool = True,
        scores: dict[str, int] | None = None,
    ) -> Checked:
        """Grade the current stage of the attempt at `name` (every later one too with
        `every`) and record it (`CheckRun.run`: `decide`, `scores`)."""
        attempt = self.to_check(name, scoring=bool(scores))
        run = CheckRun(self.store, self.clock, self.root, self.unit_of)
        return run.run(attempt, every, note, limits, decide=decide, scores=scores)

    # -- reveal, repair, due
    def reveal(self, name: str | None) -> tuple[Attempt, Mechanism]:
        """Mark the latest attempt (at `name`) as having opened the reference."""
        package = self.item(name).package if name else None
        attempts = self.store.active(package) or self.store.attempts(package)
        if not attempts:
            raise RefusedError("no attempt to reveal the reference for: `start MECH` first")
        attempt = max(attempts, key=lambda a: a.started_at)
        mechanism = self.unit_of(attempt)
        self.store.open_reference(attempt.id, self.clock())
        return attempt, mechanism

    def repair_plan(self, name: str | None) -> tuple[str, tuple[int, int]]:
        """The first drill that owns the current attempt's last failure, and the link."""
        attempt = self.current(name)
        return repair_plan(self.store, attempt, self.unit_of(attempt))

    def owner_drill(self, attempt: Attempt) -> tuple[str, ...]:
        """A transfer case's canonical owner, where it is a drill (`repairs.owner_drill`)."""
        return owner_drill(self.unit_of(attempt))

    def pending(self, item: str) -> Review | None:
        """An item's next pending re-solve."""
        return pending(self.store, item)

    def due(self, today: str) -> tuple[list[Review], Review | None]:
        """Pending re-solves due by `today`, oldest first; and, none due, the next ahead."""
        pending = [r for r in self.store.reviews() if r.status == "pending"]
        now_due = [r for r in pending if r.due_day <= today]
        ahead = None if now_due else min(pending, key=lambda r: r.due_day, default=None)
        return now_due, ahead
