"""`watch [ITEM]`: re-check the current stage on every save, on one live terminal screen.

File events come from `watchfiles` (the attempt's folder, filtered to the attempt file,
so an editor's save-by-rename counts); the screen is `rich`'s Live display, redrawn a
few times a second so the budget ticks. A check is the same `check --all` the command
runs (same store rows: a save that passes several stages advances through all of them),
with one difference: a save is not a decision. A failing save records its check but no
first wrong decision (nor re-solves) until the stage's budget has run out; an explicit
`check` decides at once. Ctrl-C during a check records it as interrupted and leaves.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import watchfiles
from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.panel import Panel
from rich.text import Text

from .errors import RefusedError
from .history import duration
from .stages import units
from .store import Attempt, StageRecord

if TYPE_CHECKING:
    from .commands import Practice

DEBOUNCE_MS = 100  # an editor's save is one event; a burst of writes is one check
TICK_MS = 250


@dataclass
class Screen:
    """What the screen shows. The store is read in the watching thread only (`snapshot`);
    `render`, called by the Live display's refresh thread, reads the snapshot and the clock."""

    practice: Practice
    name: str | None
    path: Path = Path()
    attempt: Attempt | None = None
    record: StageRecord | None = None
    verdict: list[str] = field(default_factory=list)
    state: str = "waiting for a save"
    note: str = ""
    checks: int = 0
    last_latency_s: float | None = None  # file event to verdict, the last check

    def follow(self) -> None:
        """Point at the attempt in progress (after a drill passes: the stage it resumes)."""
        self.attempt = self.practice.current(self.name)
        self.path = Path(self.attempt.file)
        self.snapshot()

    def snapshot(self) -> None:
        assert self.attempt is not None
        self.attempt = self.practice.store.attempt(self.attempt.id)
        self.practice.unit_of(self.attempt)  # a store naming an unknown item or stage: one line
        stages = self.practice.store.stages(self.attempt.id)
        self.record = next((r for r in stages if r.stage == self.attempt.stage), None)

    def budget_spent(self) -> bool:
        """Has the current stage's budget run out (its failing check is then a decision)?"""
        assert self.attempt is not None
        self.snapshot()
        if self.record is None:
            return False
        return self.record.spent(self.practice.clock()) > self.record.minutes * 60

    def run_check(self, saved_at: float) -> None:
        assert self.attempt is not None
        lines: list[str] = []
        say = self.practice.say
        self.practice.say = lines.append
        self.state, self.note = "checking...", ""
        decide = self.budget_spent()
        try:
            code = self.practice.check(self.attempt.mechanism, True, None, {}, decide=decide)
            self.state = "PASS" if code == 0 else "FAIL"
        except RefusedError as error:
            lines.append(str(error))
            self.state = "refused"
        finally:
            self.practice.say = say
        self.verdict = lines
        self.checks += 1
        self.last_latency_s = time.perf_counter() - saved_at
        self.snapshot()
        if self.attempt.status != "active":
            sent = self.attempt.repair_of
            if sent is not None and self.practice.store.attempt(sent).status == "active":
                # A repair drill passed: watch the stage it resumes, not the drill.
                self.name = self.practice.store.attempt(sent).mechanism
            try:
                self.follow()
            except RefusedError:
                self.note = "no attempt in progress: `start` one (`due` says what), or Ctrl-C"

    def render(self) -> RenderableType:
        attempt, record = self.attempt, self.record
        assert attempt is not None
        unit = units()[attempt.mechanism]
        stage = unit.stage(attempt.stage)
        head = Text(
            f"{unit.package} attempt {attempt.number}  stage {stage.number}/{len(unit.stages)}"
            f"  ({attempt.status})",
            style="bold",
        )
        clock = Text("")
        if record is not None and attempt.status == "active":
            left = stage.budget_s - record.spent(self.practice.clock())
            clock = Text(
                f"time left: {duration(left)} of {stage.minutes}m"
                if left >= 0
                else f"over budget by {duration(-left)} ({stage.minutes}m)",
                style="green" if left >= 0 else "red",
            )
        body = Group(
            head,
            Text(f"build: {stage.build}"),
            Text(f"stop when: {stage.stop}"),
            clock,
            Text(""),
            Text(f"last verdict: {self.state}", style=_style(self.state)),
            *(Text(line) for line in self.verdict),
            Text(self.note, style="yellow"),
            Text(f"watching {self.path.name}: save to re-check, Ctrl-C to leave", style="dim"),
        )
        return Panel(body, title="gptlab-practice watch")


def _style(state: str) -> str:
    return {"PASS": "bold green", "FAIL": "bold red"}.get(state.split(" ")[0], "yellow")


def watch(
    practice: Practice,
    name: str | None,
    *,
    console: Console | None = None,
    stop: threading.Event | None = None,
    ready: threading.Event | None = None,
    on_check: Callable[[Screen], None] | None = None,
) -> int:
    """Re-check on every save until Ctrl-C (or `stop`, for tests). Exit status 0.

    `ready` is set once file events are being watched; `on_check` sees each verdict."""
    from gptlab_testkit import warm_up

    screen = Screen(practice, name)
    screen.follow()
    folder = screen.path.parent
    warm_up()  # torch and the references now, so the first save is checked as fast as the rest

    def is_attempt(change: watchfiles.Change, path: str) -> bool:
        return change != watchfiles.Change.deleted and Path(path) == screen.path

    with Live(
        get_renderable=screen.render, console=console, refresh_per_second=1000 / TICK_MS
    ) as live:
        try:
            for changes in watchfiles.watch(
                folder,
                watch_filter=is_attempt,
                debounce=DEBOUNCE_MS,
                step=20,
                stop_event=stop,
                rust_timeout=TICK_MS,
                yield_on_timeout=True,
                recursive=False,
            ):
                if ready is not None:
                    ready.set()
                if changes:
                    saved = time.perf_counter()
                    screen.state = "checking..."
                    live.refresh()
                    screen.run_check(saved)
                    if on_check:
                        on_check(screen)
                live.refresh()
        except KeyboardInterrupt:
            if screen.state == "checking...":
                screen.verdict = ["the check in progress is recorded as interrupted"]
            screen.state = "left (Ctrl-C); the record is consistent"
            live.refresh()
    return 0
