"""The commands: each one asks the workbench to act on the record and says what happened
through the views. `watch` drives `check` through the same object."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from . import error_log, messages, mock_view, picture, route_view, tables
from .branches import names_m03
from .errors import RefusedError
from .gates import gates, route_of
from .items import item_named
from .mock import mock_scores
from .mock_desk import MockDesk
from .route_desk import RouteDesk
from .rubric import RUBRIC
from .stages import Mechanism
from .store import Attempt, Store
from .workbench import Clock, Limits, Workbench

TICK_S = 30.0  # a mock's timer wakes this often to read the clock


class Practice:
    """The commands, over one home folder, its store and a clock; `say` prints a line."""

    def __init__(
        self, home: Path, root: Path | None, clock: Clock, out: Callable[[str], None]
    ) -> None:
        self.bench = Workbench(home, root, clock)
        self.route = RouteDesk(self.bench)
        self.mocks = MockDesk(self.bench)
        self.say = out
        self.wait: Callable[[float], None] = time.sleep  # a mock's timer (tests: a fake clock)

    @property
    def home(self) -> Path:
        return self.bench.home

    @property
    def root(self) -> Path | None:
        return self.bench.root

    @property
    def clock(self) -> Clock:
        return self.bench.clock

    @property
    def store(self) -> Store:
        return self.bench.store

    def _say_all(self, lines: list[str]) -> None:
        for line in lines:
            self.say(line)

    def current(self, name: str | None) -> Attempt:
        return self.bench.current(name)

    def unit_of(self, attempt: Attempt) -> Mechanism:
        return self.bench.unit_of(attempt)

    def start(self, name: str | None, new: bool, repair: tuple[int, int] | None = None) -> int:
        if name is None:  # nothing named: what there is to start (a usage answer, status 2)
            self._say_all(tables.catalogue())
            return 2
        item_named(name)  # an unknown name is answered before torch is imported
        mechanism = self.bench.item(name)  # `M03` on the learner's branch
        self._say_all(messages.started(self.bench.start(mechanism, new, repair)))
        if names_m03(name):
            self.say(messages.m03_branch(self.bench.m03_branch(), mechanism))
        return 0

    def check(
        self,
        name: str | None,
        every: bool,
        note: str | None,
        limits: Limits,
        *,
        decide: bool = True,
        scores: dict[str, int] | None = None,
    ) -> int:
        """Grade the current stage (every later one with `every`): 0 passed, 1 failed;
        `scores`: the learner's model-build rubric scores, kept with the check."""
        result = self.bench.check(name, every, note, limits, decide=decide, scores=scores)
        self._say_all(messages.checked(result, self.root, self.home))
        return 0 if result.passed else 1

    def reveal(self, name: str | None) -> int:
        attempt, mechanism = self.bench.reveal(name)
        self._say_all(messages.revealed(attempt, mechanism, self.root))
        return 0

    def repair(self, name: str | None) -> int:
        """Start the first drill that owns the current attempt's last failure, linked to it."""
        drill, link = self.bench.repair_plan(name)
        return self.start(drill, new=True, repair=link)

    def due(self) -> int:
        self._say_all(tables.due(self.bench, self.clock().date().isoformat()))
        return 0

    def status(self, show_gates: bool = False) -> int:
        if show_gates:
            self._say_all(route_view.gate_lines(gates(self.store), route_of(self.store)))
            return 0
        self._say_all(tables.status(self.bench, self.clock()))
        return 0

    def history(self, name: str | None) -> int:
        chosen = [self.bench.item(name)] if name else tables.practised(self.bench)
        practised = [m for m in chosen if self.store.attempts(m.package)]
        if not practised:
            raise RefusedError("no attempts yet: `start MECH`")
        self._say_all(tables.history(self.bench, practised))
        return 0

    def diagnose(self, scores: dict[str, int], finish: bool) -> int:
        """The baseline: record the learner's scores, then (finish) fix the route."""
        if scores:
            self.route.score_yourself(scores)
        state = self.route.fix_route() if finish else self.route.diagnostic()
        self._say_all(route_view.diagnosis(state))
        return 0

    def today(self, day: int | None) -> int:
        """Today's day of the route (or day `day`): its blocks, repairs and re-solves first."""
        self._say_all(route_view.today(self.route.today(day)))
        return 0

    def plan(self) -> int:
        """Every day of the route, what was done on each, today marked."""
        state = self.route.today()
        finished = self.route.finished_by_day()
        self._say_all(route_view.plan(state.route, state.number, finished))
        totals = [(m, sum(mock_scores(m).values())) for m in self.store.mocks()]
        scored = [(m, t) for m, t in totals if len(mock_scores(m)) == len(RUBRIC)]
        target = self.home / picture.PICTURE_NAME
        self.say(picture.draw(state.route, state.number, finished, scored, target))
        return 0

    def log(self, form: str) -> int:
        """The error log, one entry per miss: `csv` or `markdown` on stdout."""
        rows = error_log.entries(self.store)
        text = error_log.as_csv(rows) if form == "csv" else error_log.as_markdown(rows)
        self._say_all(text.rstrip("\n").split("\n"))
        return 0

    def mock(self, start: bool, scores: dict[str, int], abandon: bool = False) -> int:
        """Show the next draw (or score the last mock); `start`: run one to its deadline,
        freeze the attempt there and grade the frozen copy; `abandon`: close an open one."""
        if abandon:
            self._say_all(mock_view.rubric(self.mocks.abandon()))
            self.say("logged as abandoned: `mock --start` draws the next one")
            return 0
        if scores:
            scored = self.mocks.score(scores)
            self._say_all(mock_view.rubric(scored, self.mocks.repair_after(scored)))
            return 0
        if not start:
            self._say_all(mock_view.drawn(self.mocks.draw()))
            self._say_all(mock_view.log(self.store.mocks()))
            return 0
        record, begun = self.mocks.start()
        self._say_all(messages.started(begun))
        self._say_all(mock_view.started(record))
        try:
            while (left := (record.deadline - self.clock()).total_seconds()) > 0:
                self.wait(min(left, TICK_S))
        except KeyboardInterrupt:
            self.say("submitted before the deadline: the attempt is copied now")
        frozen = self.mocks.freeze(record)
        self.say(f"frozen: {frozen} (edits to the attempt from now on change nothing)")
        graded = self.mocks.grade(record.id)
        self._say_all(mock_view.rubric(graded, self.mocks.repair_after(graded)))
        return 0

    def close(self) -> None:
        self.bench.close()
