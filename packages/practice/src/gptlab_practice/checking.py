"""What a check does to the record: refuse what it can before writing anything, write its
`running` row, grade the stage through the grader, record each stage's verdict (and, on a
routed miss, the first wrong decision and its re-solves), and tell what the record now
holds; a model build's check adds the rubric evidence and the learner's scores. Prints
nothing."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

from .errors import RefusedError, UsageError
from .sampler import history_of
from .stages import Mechanism, starting_artifact
from .store import Attempt, Review, Store, StoreError
from .verdicts import StageVerdict, stage_verdicts

if TYPE_CHECKING:  # the grader imports torch: only a check pays for it
    from gptlab_testkit import TestResult

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
    # A model build's check: the machine's evidence per model-build rubric dimension, and
    # the learner's own 0-4 scores given with this attempt's checks (later ones win).
    rubric: dict[str, str] = field(default_factory=dict)
    rubric_scores: dict[str, int] = field(default_factory=dict)

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


def pending(store: Store, item: str) -> Review | None:
    """An item's next pending re-solve."""
    found = [r for r in store.reviews(item) if r.status == "pending"]
    return found[0] if found else None


class CheckRun:
    """One check over a record: the store, the clock, the checkout whose suites grade, and
    how the record's attempts map to units (a damaged row refused in one line)."""

    def __init__(
        self,
        store: Store,
        clock: Clock,
        root: Path | None,
        unit_of: Callable[[Attempt], Mechanism],
    ) -> None:
        self.store = store
        self.clock = clock
        self.root = root
        self.unit_of = unit_of

    def run(
        self,
        attempt: Attempt,
        every: bool,
        note: str | None,
        limits: Limits,
        *,
        decide: bool = True,
        scores: dict[str, int] | None = None,
    ) -> Checked:
        """Grade the attempt's current stage (every later one too with `every`) and record it.

        `decide`: whether a routed failure may record the first wrong decision (and its
        re-solves). The command always decides; `watch` decides only once the stage's budget
        has run out (a save is not a decision). `scores`: the learner's own model-build
        rubric scores, stored with this check (a model build's check only). Everything that
        can refuse is checked before the check's `running` row is written.
        """
        mechanism = self.unit_of(attempt)
        if scores and not mechanism.kit_name:
            raise RefusedError(
                f"{mechanism.package} is not a model build: the model-build rubric's scores"
                " go with a check of M01-M05 or M10"
            )
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
        checked = self._checked(attempt, mechanism, verdicts, run.wall_s, decide)
        if not mechanism.kit_name:
            return checked
        return self._with_rubric(checked, check_id, run.results, scores or {})

    def _with_rubric(
        self, checked: Checked, check_id: int, results: list[TestResult], scores: dict[str, int]
    ) -> Checked:
        """A model build's check: the rubric evidence its own tests show, and the learner's
        scores stored with it (merged over the attempt's earlier checks')."""
        from .build_rubric import build_evidence
        from .grader import rubric_rows

        unit = checked.mechanism
        if scores:
            self.store.add_check_scores(check_id, scores, self.clock())
        rows = rubric_rows(results, unit.folder, unit.kit_name)
        own = [c.id for c in self.store.checks(checked.after.id)]
        return replace(
            checked,
            rubric=build_evidence(rows, unit.kit_name),
            rubric_scores=self.store.check_scores(own),
        )

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
            pending=pending(self.store, mechanism.package),
        )

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
