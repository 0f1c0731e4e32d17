"""gptlab-practice: timed blank-editor stages over the grader (`nox -s practice -- COMMAND`).

    start [ITEM] [--new]            an empty attempt file (a mechanism tinygpt or M01, a named
                                    re-solve modern_lm:layer_reconstruction, a drill P19, a
                                    Triton kernel T04); no ITEM: list
    check [ITEM] [--all] [--note T] grade the current stage (--all: on until one fails)
    repair [ITEM]                   start the drill that owns the last failure
    watch [ITEM]                    re-check on every save, one live screen
    due                             the re-solves due today, oldest first
    reveal [ITEM]                   where the reference is; marks it opened
    status                          every item: attempt, stage, time, next re-solve, learned
    history [ITEM]                  a table per item and <home>/history.png

The home folder is --home, else $GPTLAB_PRACTICE_HOME, else ./practice/. Exit status:
0 done (a check passed), 1 a check failed or a command refused, 2 usage, 3 store error.
"""

from __future__ import annotations

import argparse
import difflib
import importlib.util
import io
import math
import os
import re
import shlex
import sys
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

from .history import PLOT_NAME, duration, plot, table
from .learned import verdict
from .stages import (
    KERNELS_PACKAGE,
    Mechanism,
    kernels,
    mechanisms,
    readme_of,
    reference_of,
    resolves,
    starting_artifact,
    unit_named,
    units,
)
from .store import STORE_NAME, Attempt, CheckRecord, Review, StageRecord, Store, StoreError

if TYPE_CHECKING:  # the grader imports torch: only `check` and `start` pay for it
    from gptlab_testkit import TestResult

    from .grader import StageRun

Clock = Callable[[], datetime]
HOME_VARIABLE = "GPTLAB_PRACTICE_HOME"
ROOT_VARIABLE = "GPTLAB_ROOT"
FAILURES_SHOWN = 3  # failed tests a check names; the rest are counted
STATUS_WIDTH = 120  # `status` fits a 120-column terminal: long cells wrap inside their column


class Limits(TypedDict, total=False):
    """The grader's protection options a check may override (`run_stage`'s keywords)."""

    timeout: float
    memory_limit: int
    workers: int


class RefusedError(Exception):
    """A command that cannot go ahead (one line, exit status 1)."""


class UsageError(Exception):
    """Bad arguments (exit status 2)."""


def _system_clock() -> datetime:
    return datetime.now().astimezone()


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gptlab-practice", description=(__doc__ or "").split("\n\n")[0]
    )
    parser.add_argument(
        "--home", type=_folder, help=f"practice folder (default ${HOME_VARIABLE} or ./practice)"
    )
    parser.add_argument(
        "--root",
        type=_folder,
        help=f"the gptlab checkout (default ${ROOT_VARIABLE} or found upward)",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    start = commands.add_parser("start", help="begin an attempt from an empty file")
    start.add_argument(
        "mechanism",
        nargs="?",
        metavar="ITEM",
        help="a mechanism (tinygpt, or its kit name M01), a named re-solve"
        " (modern_lm:layer_reconstruction), a drill (P19) or a Triton kernel (T04); without it,"
        " the list of what can be started",
    )
    start.add_argument(
        "--new", action="store_true", help="archive an attempt in progress and begin again"
    )
    check = commands.add_parser("check", help="grade the current stage")
    check.add_argument("mechanism", nargs="?")
    check.add_argument(
        "--all", action="store_true", help="go on through later stages until one fails"
    )
    check.add_argument("--note", help="what you decided (joins the first wrong decision)")
    check.add_argument(
        "--timeout", type=float, default=None, help="per-test limit in seconds (default 60)"
    )
    check.add_argument(
        "--memory-limit", type=int, default=None, help="MiB per test process (default 4096)"
    )
    check.add_argument(
        "--workers",
        type=int,
        default=None,
        help="test worker processes (default 1; 0: none, faster, no crash isolation)",
    )
    repair = commands.add_parser("repair", help="start the drill that owns the last failure")
    repair.add_argument("mechanism", nargs="?", metavar="ITEM")
    watch = commands.add_parser("watch", help="re-check the current stage on every save")
    watch.add_argument("mechanism", nargs="?", metavar="ITEM")
    commands.add_parser("due", help="the re-solves due today or overdue, oldest first")
    reveal = commands.add_parser("reveal", help="where the reference is (marks it opened)")
    reveal.add_argument("mechanism", nargs="?")
    commands.add_parser("status", help="every item at a glance")
    history = commands.add_parser("history", help="tables and <home>/history.png")
    history.add_argument("mechanism", nargs="?")
    return parser


def columns(rows: list[list[str]], width: int) -> list[str]:
    """Rows as aligned columns (the first row is the header) within `width`: rich's table
    layout, which wraps a cell inside its column only when the row would not fit."""
    from rich.console import Console
    from rich.table import Table

    grid = Table(box=None, pad_edge=False, padding=(0, 2, 0, 0), header_style="", expand=False)
    for index, title in enumerate(rows[0]):  # the first column (a name) and headers never wrap
        first = max((len(row[0]) for row in rows), default=0) if index == 0 else len(title)
        grid.add_column(title, overflow="fold", no_wrap=index == 0, min_width=first)
    for row in rows[1:]:
        grid.add_row(*row)
    console = Console(width=width, file=io.StringIO(), color_system=None, highlight=False)
    with console.capture() as captured:
        console.print(grid)
    return [line.rstrip() for line in captured.get().splitlines()]


def when_due(step: str) -> str:
    """A scheduled re-solve's step in words, the same in `due`, `check` and `status`."""
    return {
        "same day": "later the same day, after an unrelated task",
        "next day": "the next day",
        "3 days": "three days after the miss",
        "a week": "a week after the miss",
    }.get(step, step)


def _folder(text: str) -> Path:
    """A folder option: an empty value would silently mean the working folder."""
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty path (name a folder)")
    return Path(text)


def _home(option: Path | None) -> Path:
    """The practice folder; one that exists as anything but a folder is refused, naming where
    it came from (read as a home, a file would look like an empty store)."""
    from_environment = bool(os.environ.get(HOME_VARIABLE)) and option is None
    value = option or (Path(os.environ[HOME_VARIABLE]) if from_environment else None)
    home = (value or Path.cwd() / "practice").expanduser().resolve()
    if home.exists() and not home.is_dir():
        named = (
            f"${HOME_VARIABLE}={os.environ[HOME_VARIABLE]}"
            if from_environment
            else f"--home {value}"
            if value
            else f"the default home ./practice ({home})"
        )
        raise UsageError(f"{named}: not a folder (a file is there): name a practice folder")
    return home


def find_root(option: Path | None, home: Path) -> Path:
    """The checkout whose packages/*/tests a check runs."""
    if option or os.environ.get(ROOT_VARIABLE):
        root = (option or Path(os.environ[ROOT_VARIABLE])).expanduser().resolve()
        if not (root / "packages" / "testkit").is_dir():
            raise UsageError(f"--root {root}: not a gptlab checkout (no packages/testkit)")
        return root
    for start in (Path.cwd().resolve(), home):
        for folder in (start, *start.parents):
            if (folder / "packages" / "testkit" / "pyproject.toml").is_file():
                return folder
    raise UsageError(
        f"cannot find the gptlab checkout above {Path.cwd()}: pass --root or set ${ROOT_VARIABLE}"
    )


KERNEL_ID = re.compile(r"[Tt]\d\d")  # a Triton-lane kernel's id (T04)


def _mechanism(name: str) -> Mechanism:
    """A mechanism (`tinygpt`, the seed's `tiny_gpt`, the kit's `M01`), a named re-solve
    (`modern_lm:layer_reconstruction`, its file's `modern_lm_layer_reconstruction`), a
    drill (`P19`, `p19`) or a kernel (`T04`). Read from stages.toml and the drill and kernel
    catalogues only, so an unknown name is answered before torch is imported."""
    unit = unit_named(name)
    if unit is not None:
        return unit
    if KERNEL_ID.fullmatch(name) and not kernels():
        raise RefusedError(
            f"{name.upper()} is a Triton-lane kernel and {KERNELS_PACKAGE} is not installed"
            ' (practice alone does not bring triton): `pip install "packages/kernels[test]"`'
            " from the checkout"
        )
    raise UsageError(f"unknown item {name!r} ({_did_you_mean(name)}); `start` alone lists them")


def _did_you_mean(name: str) -> str:
    """`did you mean kv_cache?` from every name a learner may type (case and `-` aside)."""
    spelled: dict[str, str] = {}
    for unit in units().values():
        for typed_name in unit.names:
            spelled.setdefault(typed_name.lower(), unit.package)
    typed = name.lower().replace("-", "_")
    close = difflib.get_close_matches(typed, spelled, n=3, cutoff=0.6)
    if close:
        return "did you mean " + " or ".join(dict.fromkeys(spelled[c] for c in close)) + "?"
    return (
        f"expected a mechanism ({', '.join(mechanisms())}), a named re-solve"
        f" ({', '.join(resolves())}), a drill id (P01..P28, PT01..PT06, PT08, PT17, PT28)"
        " or a Triton kernel (T01..T08)"
    )


def catalogue() -> list[str]:
    """What `start` can begin, for `start` without ITEM."""
    lines = ["start one of these: `start ITEM`", "mechanisms (stages, minutes in all):"]
    lines += [
        f"  {m.label:<20} {len(m.stages)} stage(s), {m.total_minutes}m"
        for m in mechanisms().values()
    ]
    lines.append("named re-solves (one stage, from an empty file, on a later day):")
    lines += [
        f"  {r.package}  {r.stages[0].minutes}m: {r.stages[0].build}" for r in resolves().values()
    ]
    drills = [u.package for u in units().values() if u.drill and u.drill.id not in kernels()]
    lines += [
        "drills (the repair lane):",
        *textwrap.wrap(", ".join(drills), 88, initial_indent="  ", subsequent_indent="  "),
    ]
    if kernels():
        lines.append("Triton kernels (the Triton lane, one stage each):")
        lines += [
            f"  {kernel.id}  {kernel.minutes:>3}m: {kernel.title}" for kernel in kernels().values()
        ]
    return lines


def _label(item: str) -> str:
    """An item as lists name it: `M02 modern_lm` for a model build, else its key."""
    unit = units().get(item)
    return unit.label if unit else item


def install_hint(module: str) -> str:
    """How to install one of this project's packages that a suite needs."""
    return (
        f"the contract suites need this project's packages installed: `pip install"
        f' "packages/{module}[test]"` from the checkout (or run `nox -s practice -- check`,'
        " which installs them)"
    )


def _require_suites(mechanism: Mechanism, stage: int) -> None:
    """Refuse, before anything is recorded, a check whose suites' packages are not installed
    (practice alone installs the testkit and the drills, not the mechanisms)."""
    if mechanism.drill is not None:
        return
    for package in mechanism.packages_through(stage):
        if importlib.util.find_spec(package) is None:
            raise RefusedError(f"{package} is not installed: {install_hint(package)}")


@dataclass(frozen=True)
class StageVerdict:
    """One stage's result within a check."""

    stage: int
    passed: bool
    tests_passed: int
    failed: list[TestResult]  # in collection order; the first names the owner
    reason: str  # why nothing could be graded, or the first failure's one line
    broken: tuple[str, ...] = ()  # the clauses its failures break (`broken_clauses`)

    @property
    def owner(self) -> str | None:
        return self.failed[0].owner if self.failed else None

    def row(self) -> tuple[int, str, int, int, str | None, str]:
        outcome = "passed" if self.passed else "failed"
        return (self.stage, outcome, self.tests_passed, len(self.failed), self.owner, self.reason)


def stage_verdicts(
    mechanism: Mechanism, run: StageRun, first: int, last: int
) -> list[StageVerdict]:
    """Stages first..last in order, from one run of the last one's tests; stop at a failure."""
    from gptlab_testkit import broken_clauses

    from .grader import identity

    verdicts = []
    for number in range(first, last + 1):
        tests = [r for r in run.results if mechanism.selects(number, identity(r))]
        held = [r for r in tests if _held(r)]
        failed = [r for r in tests if r.outcome == "failed" and not _held(r)]
        if run.problem or not tests:
            reason = run.problem or "no contract test is selected by this stage"
            verdicts.append(StageVerdict(number, False, 0, [], reason))
            break
        reason = failed[0].reason if failed else ""
        passed = len(tests) - len(failed) - (len(held) if failed else 0)
        broken = tuple(broken_clauses(failed, tests))
        verdicts.append(StageVerdict(number, not failed, passed, failed, reason, broken))
        if failed:
            break
    return verdicts


def _held(result: TestResult) -> bool:
    """A passed rejection test the grader's scoring policy held back (not earned) because a
    valid-input test beside it failed. It is no failure of the attempt's (never routed, never
    a broken clause). A run of several stages (`--all`, `watch`) holds it for a later stage's
    failure too; a check of its own stage would have earned it, so with no failure of this
    stage's own it counts as passed here, and beside one it is neither passed nor failed."""
    return bool(
        getattr(result, "held", False)
    )  # the policy's field (gptlab_testkit.running.scoring)


class Practice:
    """The commands, over one home folder, its store and a clock."""

    def __init__(
        self, home: Path, root: Path | None, clock: Clock, out: Callable[[str], None]
    ) -> None:
        self.home = home
        self.root = root
        self.clock = clock
        self.say = out
        self.store = Store(home / STORE_NAME)

    # -- start
    def start(self, name: str | None, new: bool, repair: tuple[int, int] | None = None) -> int:
        if name is None:  # nothing named: what there is to start (a usage answer, status 2)
            for line in catalogue():
                self.say(line)
            return 2
        mechanism = _mechanism(name)  # an unknown name is answered before torch is imported

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
        if path.exists():
            self.say(f"archived {path.name} -> {archive(path, now).relative_to(self.home)}")
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
        self.say(f"{mechanism.package} attempt {number}: {path}")
        if artifact:
            self.say("starts from the supplied broken artifact (a debug case): repair it")
        if link:
            sent = self.store.attempt(link[0])
            self.say(
                f"repair for {sent.mechanism} stage {sent.stage}: its clock is paused until "
                f"{mechanism.package} passes"
            )
        self.say(f"graded names: {', '.join(graded_names(mechanism))}")
        self._announce(mechanism, 1)
        return 0

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

    def _announce(self, mechanism: Mechanism, number: int) -> None:
        stage = mechanism.stage(number)
        self.say(f"stage {number}/{len(mechanism.stages)} ({stage.minutes}m): {stage.build}")
        self.say(f"  stop when: {stage.stop}")

    # -- picking an attempt
    def current(self, name: str | None) -> Attempt:
        package = _mechanism(name).package if name else None
        active = self.store.active(package)
        if not active:
            hint = f"start {package}" if package else "start MECH"
            raise RefusedError(
                f"no attempt in progress{' at ' + package if package else ''}: `{hint}`"
            )
        return max(active, key=lambda a: a.started_at)

    def _to_check(self, name: str | None) -> Attempt:
        """The attempt in progress; or, named, a finished drill whose probes await answers."""
        unit = _mechanism(name) if name else None
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

    # -- check
    def check(
        self,
        name: str | None,
        every: bool,
        note: str | None,
        limits: Limits,
        *,
        decide: bool = True,
    ) -> int:
        """Grade the current stage (every later one too with `every`).

        `decide`: whether a routed failure may record the first wrong decision (and its
        re-solves). The command always decides; `watch` decides only once the stage's budget
        has run out (a save is not a decision). Everything that can refuse is checked before
        the check's `running` row is written.
        """
        attempt = self._to_check(name)
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
        _require_suites(mechanism, last)

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
        return self._tell(attempt, mechanism, verdicts, run.wall_s, decide)

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
        from .schedule import after_miss
        from .sheet import ledger_filled, probe_answers

        now = self.clock()
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
            on_miss=after_miss(mechanism, now.date()),
            decision=decide and not self._untouched_artifact(mechanism, text),
        )

    def _tell(
        self,
        attempt: Attempt,
        mechanism: Mechanism,
        verdicts: list[StageVerdict],
        wall_s: float,
        decide: bool,
    ) -> int:
        """What a recorded check says: each stage's verdict, the decision, what comes next."""
        from .sheet import ledger_filled, probe_answers

        now = self.clock()
        records = {r.stage: r for r in self.store.stages(attempt.id)}
        for verdict_ in verdicts:
            record = records.get(verdict_.stage)
            self._report(mechanism, verdict_, record.spent(now) if record else 0.0)
        recorded = self.store.attempt(attempt.id)
        owner = verdicts[-1].owner
        decided = bool(owner and attempt.first_wrong_owner is None and recorded.first_wrong_owner)
        if decided:
            noted = recorded.first_wrong_note
            clause = self._clause_line(verdicts[-1].broken[0]) if verdicts[-1].broken else ""
            self.say(
                f"  first wrong decision recorded: {recorded.first_wrong_owner}"
                + (f", first broken clause {clause}" if clause else "")
                + (
                    f' (note: "{noted}")'
                    if noted
                    else ' (say what you decided: check --note "...")'
                )
            )
        elif owner and not decide and attempt.first_wrong_owner is None:
            self.say(
                "  not recorded as a decision (a save is not one): `check` records it, or the"
                " stage's budget running out"
            )
        self.say(f"  graded in {wall_s:.1f} s")
        self.say(  # practice runs the attempt in-process for speed: nothing guards the score
            "  unguarded: your code ran beside the tests (fast, for practice);"
            " only `grade` judges it out of its reach"
        )
        text = Path(attempt.file).read_text(encoding="utf-8", errors="replace")
        if not ledger_filled(text):
            self.say("  ledger: not filled (shapes, aliasing, stability, costs: learned needs it)")
        if decided:
            due = [r for r in self.store.reviews() if r.miss_attempt_id == attempt.id]
            if due:
                self.say(
                    "  re-solves scheduled: "
                    + ", ".join(f"{r.item} {r.due_day} ({r.step})" for r in due)
                )
        if recorded.status == "done":
            probes = mechanism.drill.probes if mechanism.drill else ()
            self._finished(mechanism, recorded, len(probes) - len(probe_answers(text, probes)))
        elif verdicts[-1].passed:
            self._announce(mechanism, recorded.stage)
        return 0 if verdicts[-1].passed else 1

    def _clause_line(self, clause_id: str) -> str:
        """`P19.6 (semantics) grouped queries: ...`, from the README that states it (the
        drills', modern_lm's or the kernels'), cut to a line; the id alone where none is found."""
        from gptlab_testkit import readme_clauses

        for package in ("drills", "modern_lm", "kernels"):
            readme = (self.root or Path(".")) / "packages" / package / "README.md"
            try:
                clause = readme_clauses(readme).get(clause_id) if readme.is_file() else None
            except (OSError, ValueError):
                clause = None
            if clause is not None:
                return textwrap.shorten(f"{clause_id} ({clause.kind}) {clause.text}", 100)
        return clause_id

    def _finished(self, mechanism: Mechanism, attempt: Attempt, unanswered: int) -> None:
        """What a finished attempt leads to: the stage to resume after a repair, a re-solve."""
        if unanswered:
            self.say(
                f"  {unanswered} probe(s) unanswered: answer them in the header without "
                f"reopening the code, then `check {mechanism.package}` records them"
            )
        if attempt.repair_of is not None:
            sent = self.store.attempt(attempt.repair_of)
            if sent.status == "active":
                self.say(
                    f"{mechanism.package} passed: resume {sent.mechanism} stage "
                    f"{sent.stage}/{sent.stage_count} (`check {sent.mechanism}` or "
                    f"`watch {sent.mechanism}`); its clock did not count the drill"
                )
                self._announce(self.unit_of(sent), sent.stage)
                return
        what = (
            "every stage passed"
            if mechanism.drill is None and not mechanism.resolve_of
            else "passed"
        )
        self.say(f"{mechanism.package}: {what}. {self._next_resolve(mechanism.package)}")
        for named in mechanism.resolves:
            stage = named.stages[0]
            self.say(
                f"  its named re-solve, on a later day: `start {named.package}` "
                f"({stage.minutes}m: {stage.build})"
            )

    def _report(self, mechanism: Mechanism, verdict_: StageVerdict, spent: float) -> None:
        from gptlab_testkit import drill_labels, hint_for, no_owning_drill

        from .grader import related_drills, repair_drills, repair_target

        stage = mechanism.stage(verdict_.stage)
        head = f"{mechanism.package} stage {stage.number}/{len(mechanism.stages)}"
        late = " (over budget)" if spent > stage.budget_s else ""
        clock = f"{duration(spent)} of {stage.minutes}m{late}"
        if verdict_.passed:
            self.say(f"{head}: PASS  {verdict_.tests_passed} tests, {clock}")
        elif verdict_.owner is None:
            self.say(f"{head}: FAIL  {clock}")
            self.say(f"  the attempt cannot be graded: {verdict_.reason}")
            self.say(f"  {self._hint(verdict_.reason, hint_for)}")  # that cause's advice only
        else:
            what, repair = repair_target(verdict_.owner)
            total = verdict_.tests_passed + len(verdict_.failed)
            self.say(f"{head}: FAIL  {len(verdict_.failed)} of {total} tests failed, {clock}")
            self.say(f"  first failing owner: {verdict_.owner} ({what})")
            self.say(f"  repair target: {repair}")
            if verdict_.broken:
                self.say(f"  clauses broken: {', '.join(verdict_.broken)}")
            shown = verdict_.failed[:FAILURES_SHOWN]
            for result in shown:
                self.say(f"  failed: {result.nodeid.split('::')[-1]}: {result.reason}")
            if len(verdict_.failed) > len(shown):
                more = len(verdict_.failed) - len(shown)
                self.say(f"  ... and {more} more failed (every one: {self._every_one(mechanism)})")
            drills = repair_drills(verdict_.owner, mechanism.package)
            if drills:
                labels = drill_labels(drills)
                self.say(f"  repair in the owning drill, then resume this stage: {labels}")
                self.say(f"  start the first: `repair` (or `start {drills[0]}`)")
            elif related := related_drills(verdict_.owner):
                where = f"{mechanism.package} stage {stage.number}"
                self.say(f"  {no_owning_drill(where, related)}")

    def _every_one(self, mechanism: Mechanism) -> str:
        """The grade that lists every failed test of the attempt's suite (judged, as a
        teacher's grade is), each with its reason and where it raised in the attempt."""
        from .grader import attempt_filename

        target = mechanism.package.lower() if mechanism.drill else mechanism.suite
        path = self.home / attempt_filename(mechanism)
        command = ["python", "-m", "gptlab_testkit.grade", target, str(path)]
        return f"`{shlex.join([*command, '--', '--gptlab-failures-shown=0'])}`"

    def _hint(self, reason: str, hint_for: Callable[[str], str]) -> str:
        """The grader's hint, unless the missing module is one of this project's packages:
        then the install is what is missing, not a file beside the attempt."""
        missing = re.search(r"missing module '(\w+)", reason)
        if missing and self.root and (self.root / "packages" / missing.group(1)).is_dir():
            return install_hint(missing.group(1))
        return hint_for(reason)

    # -- reveal
    def reveal(self, name: str | None) -> int:
        package = _mechanism(name).package if name else None
        attempts = self.store.active(package) or self.store.attempts(package)
        if not attempts:
            raise RefusedError("no attempt to reveal the reference for: `start MECH` first")
        attempt = max(attempts, key=lambda a: a.started_at)
        mechanism = self.unit_of(attempt)
        root = self.root or Path("<gptlab checkout>")
        if attempt.first_wrong_owner is None:
            self.say("no first wrong decision recorded yet (the seed records it before reading)")
        else:
            note = f': "{attempt.first_wrong_note}"' if attempt.first_wrong_note else ""
            where = f"stage {attempt.first_wrong_stage}"
            self.say(f"first wrong decision: {attempt.first_wrong_owner} ({where}){note}")
        self.store.open_reference(attempt.id, self.clock())
        if mechanism.drill:
            self.say(f"reference: {root / reference_of(mechanism.drill)}")
            self.say(f"README:    {root / readme_of(mechanism.drill)}")
        else:
            folder = root / "packages" / mechanism.suite
            self.say(f"reference: {folder / 'src' / mechanism.suite}")
            self.say(f'README:    {folder / "README.md"}, section "{mechanism.readme_section}"')
        self.say(f"attempt {attempt.number} is marked as having opened the reference")
        return 0

    # -- repair and due
    def repair(self, name: str | None) -> int:
        """Start the first drill that owns the current attempt's last failure, linked to it."""
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
        drills = repair_drills(last.failed_owner, attempt.mechanism)
        if not drills:
            where = f"{attempt.mechanism} stage {last.stage}"
            related = related_drills(last.failed_owner)
            raise RefusedError(
                f"{last.failed_owner}: {no_owning_drill(where, related)}"
                if related
                else f"no drill owns {last.failed_owner}: repair it in {where} itself"
            )
        return self.start(drills[0], new=True, repair=(attempt.id, last.id))

    def due(self) -> int:
        """Pending re-solves due today or overdue, oldest first; then the next one ahead."""
        today = self.clock().date().isoformat()
        pending = [r for r in self.store.reviews() if r.status == "pending"]
        now_due = [r for r in pending if r.due_day <= today]
        if not now_due:
            ahead = min(pending, key=lambda r: r.due_day, default=None)
            later = (
                f"; next: {_label(ahead.item)} on {ahead.due_day} ({ahead.step})" if ahead else ""
            )
            self.say(f"nothing due today ({today}){later}")
            return 0
        self.say(f"due on {today} (oldest first):")
        for review in now_due:
            self.say("  " + self._review_line(review, today))
        return 0

    def _review_line(self, review: Review, today: str) -> str:
        miss = self.store.attempt(review.miss_attempt_id)
        late = " (overdue)" if review.due_day < today else ""
        return (
            f"{review.due_day}{late}  {_label(review.item)}: re-solve {when_due(review.step)},"
            f" {self._how_to_begin(review.item)}; miss: {miss.mechanism} attempt {miss.number},"
            f" {miss.first_wrong_owner or '?'}"
        )

    def _how_to_begin(self, item: str) -> str:
        """How a re-solve of `item` begins: `start` from an empty file, unless an attempt is
        in progress there (`start` refuses it): then go on with it, or archive it."""
        active = self.store.active(item)
        if not active:
            return f"from an empty file (`start {item}`)"
        return (
            f"once attempt {active[-1].number}, in progress, is finished (`check {item}` or"
            f" `watch {item}`) or archived (`start {item} --new`, from an empty file)"
        )

    def _next_resolve(self, item: str) -> str:
        """The one sentence about an item's next re-solve: its pending one (the kit's spacing
        after a miss), else the later-day one that learned needs."""
        pending = [r for r in self.store.reviews(item) if r.status == "pending"]
        if pending:
            review = pending[0]
            return (
                f"Next re-solve: {review.due_day}, {when_due(review.step)}, from an empty file"
                f" (`start {item}`)."
            )
        return (
            f"Next re-solve: on a later day (learned needs one clean one), from an empty file"
            f" (`start {item}`)."
        )

    # -- status and history
    def _stages_of(self, attempts: list[Attempt]) -> dict[int, list[StageRecord]]:
        return {a.id: self.store.stages(a.id) for a in attempts}

    def _checks_of(self, attempts: list[Attempt]) -> dict[int, list[CheckRecord]]:
        return {a.id: self.store.checks(a.id) for a in attempts}

    def _practised(self) -> list[Mechanism]:
        """Every mechanism, then the drills that have an attempt or a re-solve."""
        seen = {a.mechanism for a in self.store.attempts()} | {r.item for r in self.store.reviews()}
        return [u for u in units().values() if u.drill is None or u.package in seen]

    def _next_review(self, item: str) -> str:
        pending = [r for r in self.store.reviews(item) if r.status == "pending"]
        return f"{pending[0].due_day} ({pending[0].step})" if pending else "-"

    def status(self) -> int:
        """One row per item, at most STATUS_WIDTH columns; why each practised item is not
        learned yet, repairs and unfinished checks on lines of their own below."""
        now = self.clock()
        header = ["item", "attempt", "stage", "in stage", "first wrong decision"]
        rows = [[*header, "next re-solve", "learned"]]
        below: list[str] = []
        untried: list[str] = []  # named in one line, not a row each
        for mechanism in self._practised():
            attempts = self.store.attempts(mechanism.package)
            if not attempts and self._next_review(mechanism.package) == "-":
                untried.append(mechanism.label)
                continue
            learned = verdict(attempts, self._stages_of(attempts), self._checks_of(attempts))
            if not attempts:
                row = [mechanism.label, "-", "-", "-", "-"]
                rows.append([*row, self._next_review(mechanism.package), "no attempt"])
                continue
            latest = attempts[-1]
            in_stage = "-"
            if latest.status == "active":
                self.unit_of(latest)
                record = next(
                    (r for r in self.store.stages(latest.id) if r.stage == latest.stage), None
                )
                if record is None:
                    raise self.store.damaged(
                        f"{latest.mechanism} attempt {latest.number} has no row for its stage"
                        f" {latest.stage}"
                    )
                spent = record.spent(now)
                late = "!" if spent > record.minutes * 60 else ""
                in_stage = f"{duration(spent)} of {record.minutes}m{late}"
                drilling = [a for a in self.store.active() if a.repair_of == latest.id]
                if drilling:
                    below.append(
                        f"{latest.mechanism} stage {latest.stage}: its clock is paused while"
                        f" repairing in {drilling[-1].mechanism}"
                    )
            wrong = (
                f"{latest.first_wrong_owner} (s{latest.first_wrong_stage})"
                if latest.first_wrong_owner
                else "-"
            )
            if not learned.learned:
                below.append(f"{mechanism.package} not learned yet: {learned.why}")
            rows.append(
                [
                    mechanism.label,
                    f"{latest.number} {latest.status}",
                    f"{latest.stage}/{latest.stage_count}",
                    in_stage,
                    wrong,
                    self._next_review(mechanism.package),
                    f"yes ({learned.why})" if learned.learned else "not yet",
                ]
            )
        for line in columns(rows, STATUS_WIDTH) if len(rows) > 1 else []:
            self.say(line)
        if untried:
            what = "no attempt yet" if len(rows) > 1 else "no attempt yet at any item"
            for line in textwrap.wrap(
                f"{what} (`start ITEM`): {', '.join(untried)}", STATUS_WIDTH, subsequent_indent="  "
            ):
                self.say(line)
        for attempt in self.store.attempts():
            interrupted = [
                c for c in self.store.checks(attempt.id) if c.outcome in ("running", "error")
            ]
            if interrupted:
                below.append(
                    f"{len(interrupted)} check(s) of {attempt.mechanism} attempt "
                    f"{attempt.number} did not finish (interrupted)"
                )
        for note in below:
            for line in textwrap.wrap(
                note, STATUS_WIDTH, initial_indent="note: ", subsequent_indent="  "
            ):
                self.say(line)
        return 0

    def history(self, name: str | None) -> int:
        chosen = [_mechanism(name)] if name else self._practised()
        practised = [m for m in chosen if self.store.attempts(m.package)]
        if not practised:
            raise RefusedError("no attempts yet: `start MECH`")
        for mechanism in practised:
            attempts = self.store.attempts(mechanism.package)
            checks = self._checks_of(attempts)
            for line in table(mechanism, attempts, self._stages_of(attempts), checks):
                self.say(line)
            for attempt in attempts:
                for at, text in self.store.notes(attempt.id):
                    self.say(f"  attempt {attempt.number} note, {at:%Y-%m-%d %H:%M}: {text}")
                for check in checks[attempt.id]:
                    for number, question, answer in self.store.probe_answers(check.id):
                        self.say(f"  attempt {attempt.number} probe {number}: {question}")
                        self.say(f"    > {answer}")
            self.say("")
        self.say(plot(self.store, practised, self.home / PLOT_NAME))
        return 0

    def close(self) -> None:
        self.store.close()


def _limits(options: argparse.Namespace) -> Limits:
    limits: Limits = {}
    if options.timeout is not None:
        if not math.isfinite(options.timeout) or options.timeout <= 0:
            raise UsageError(
                f"--timeout must be a finite number > 0 seconds, got {options.timeout:g}"
            )
        limits["timeout"] = options.timeout
    if options.memory_limit is not None:
        if options.memory_limit < 0:
            raise UsageError(f"--memory-limit must be >= 0 MiB, got {options.memory_limit}")
        limits["memory_limit"] = options.memory_limit
    if options.workers is not None:
        if options.workers < 0:
            raise UsageError(f"--workers must be >= 0, got {options.workers}")
        limits["workers"] = options.workers
    return limits


def _note(note: str | None) -> str | None:
    """`--note`: text the store can keep (a non-UTF-8 argument is refused before any write)."""
    if note is None:
        return None
    try:
        note.encode("utf-8")
    except UnicodeEncodeError:
        raise UsageError("--note is not UTF-8 text: write it again in a UTF-8 terminal") from None
    return note


def main(argv: Sequence[str] | None = None, *, clock: Clock | None = None) -> int:
    options = _parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    try:
        home = _home(options.home)
        needs_root = options.command in ("check", "reveal", "watch")
        root = find_root(options.root, home) if needs_root else None
        practice = Practice(home, root, clock or _system_clock, print)
        try:
            if options.command == "start":
                return practice.start(options.mechanism, options.new)
            if options.command == "check":
                limits, note = _limits(options), _note(options.note)
                return practice.check(options.mechanism, options.all, note, limits)
            if options.command == "reveal":
                return practice.reveal(options.mechanism)
            if options.command == "repair":
                return practice.repair(options.mechanism)
            if options.command == "due":
                return practice.due()
            if options.command == "watch":
                from .watch import watch

                return watch(practice, options.mechanism)
            if options.command == "status":
                return practice.status()
            return practice.history(options.mechanism)
        finally:
            practice.close()
    except UsageError as error:
        print(f"gptlab-practice: {error}", file=sys.stderr)
        return 2
    except RefusedError as error:
        print(f"gptlab-practice: {error}", file=sys.stderr)
        return 1
    except StoreError as error:
        print(f"gptlab-practice: {error}", file=sys.stderr)
        return 3
    except OSError as error:  # the home or an attempt file cannot be written or read
        where = f" {error.filename}" if error.filename else ""
        print(f"gptlab-practice:{where}: {error.strerror or error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
