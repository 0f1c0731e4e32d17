"""What a mock does to the record: the draw (a model round in its turn), the round's start,
the copy at the deadline, the judge's grade of the copy, the learner's rubric scores, and
the way out of a round left open. Prints nothing."""

from __future__ import annotations

import importlib.util
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

from gptlab_drills.catalogue import DRILLS

from .errors import RefusedError
from .items import item_named
from .mock import (
    MOCK_MINUTES,
    MODEL_KIND,
    ModelDraw,
    clause_kinds,
    judge,
    mock_draw,
    mock_scores,
    model_draw,
    model_turn,
    read_grade,
    read_model_grade,
    rubric_keys,
)
from .model_mocks import MODEL_PROMPTS, model_mocks, on_branch
from .sampler import Draw, history_of, unresolved_items
from .stages import suite_folder
from .store import MockRecord
from .workbench import Started, Workbench


class MockDesk:
    """Mocks over one workbench's record."""

    def __init__(self, bench: Workbench) -> None:
        self.bench = bench

    def running(self) -> MockRecord | None:
        """The mock neither frozen nor abandoned yet."""
        return next((m for m in self.bench.store.mocks() if m.frozen_at is None), None)

    def draw(self) -> Draw | ModelDraw:
        """The kit's sampler: an unresolved owner's canonical drill first; else, in its turn,
        a model round; else a mock-eligible case of the weakest clean family, by the
        exclusions."""
        unresolved = sorted(i for i in unresolved_items(self.bench.store) if i in DRILLS)
        if unresolved:
            case = DRILLS[unresolved[0]]
            return Draw(case, f"{case.id} is an unresolved owner: its canonical drill first")
        mocks = self.bench.store.mocks()
        if model_turn(mocks):
            branch = self.bench.m03_branch()
            installed = [
                m.package
                for m in model_mocks(branch)
                if importlib.util.find_spec(suite_folder(m.package))
            ]
            chosen = model_draw(mocks, installed, branch)
            if chosen is not None:
                return chosen
        clean: dict[str, int] = {}
        tried: dict[str, int] = {}
        for attempt in self.bench.store.attempts():
            tried[attempt.mechanism] = tried.get(attempt.mechanism, 0) + 1
            if attempt.status == "done" and attempt.first_wrong_owner is None:
                clean[attempt.mechanism] = clean.get(attempt.mechanism, 0) + 1
        return mock_draw(history_of(self.bench.store), clean, tried)

    def start(self) -> tuple[MockRecord, Started]:
        running = self.running()
        if running is not None:
            raise RefusedError(
                f"mock {running.id} ({running.prompt}) is still open (its `mock --start` was"
                " stopped before the deadline): `mock --abandon` closes it, logged as"
                " abandoned, and a new one can start"
            )
        draw = self.draw()
        if isinstance(draw, ModelDraw):
            model = draw.mock
            item, prompt, kind, owner, minutes = (
                model.package, model.prompt, MODEL_KIND, model.build, model.minutes
            )  # fmt: skip
        elif draw.case is None:
            raise RefusedError(f"nothing to draw: {draw.why}")
        else:
            item, prompt, owner = draw.case.id, draw.case.id, draw.case.owner or draw.case.id
            kind = "PT" if draw.case.id.startswith("PT") else "P"
            minutes = min(draw.case.minutes, MOCK_MINUTES)
        unit = item_named(item)
        started = self.bench.start(unit, new=False)
        now = self.bench.clock()
        attempt = self.bench.store.attempts(unit.package)[-1]
        record = MockRecord(
            attempt.id, prompt, kind, owner, draw.why, minutes, now + timedelta(minutes=minutes)
        )
        mock_id = self.bench.store.start_mock(record)
        return replace(record, id=mock_id), started

    def abandon(self) -> MockRecord:
        """Close the open mock without a copy or a grade (logged as abandoned); its attempt
        stays as it is, for `check` or `start ITEM --new`."""
        running = self.running()
        if running is None:
            raise RefusedError("no mock is open: nothing to abandon")
        self.bench.store.abandon_mock(running.id, self.bench.clock())
        return next(m for m in self.bench.store.mocks() if m.id == running.id)

    def freeze(self, mock: MockRecord) -> Path:
        """Copy the attempt as it is now (the deadline, or an early submission)."""
        import shutil

        attempt = self.bench.store.attempt(mock.attempt_id)
        folder = self.bench.home / "mocks"
        folder.mkdir(parents=True, exist_ok=True)
        frozen = folder / f"mock{mock.id}_{mock.prompt.lower()}_frozen.py"
        shutil.copyfile(attempt.file, frozen)
        frozen.chmod(0o444)  # the graded copy is never edited
        self.bench.store.freeze_mock(mock.id, frozen, self.bench.clock())
        return frozen

    def grade(self, mock_id: int) -> MockRecord:
        """Grade the frozen copy through the judge and record what it saw."""
        from .sheet import ledger_filled, probe_answers

        mock = next(m for m in self.bench.store.mocks() if m.id == mock_id)
        if mock.frozen_file is None or mock.frozen_at is None or self.bench.root is None:
            raise RefusedError(f"mock {mock.id} is not frozen yet")
        frozen = Path(mock.frozen_file)
        if mock.kind == MODEL_KIND:
            model = on_branch(MODEL_PROMPTS[mock.prompt], self.bench.m03_branch())
            tests, rubric = judge(
                self.bench.root, model.package, frozen, frozen.with_suffix(".json")
            )
            seen = read_model_grade(tests, rubric, model.build)
            return self._record_grade(mock, seen.passed, seen.run, seen.first_wrong, seen.evidence)
        tests, _ = judge(self.bench.root, mock.prompt, frozen, frozen.with_suffix(".json"))
        readme = self.bench.root / "packages" / "drills" / "README.md"
        kinds = clause_kinds(readme)
        text = frozen.read_text(encoding="utf-8", errors="replace")
        started = mock.deadline - timedelta(minutes=mock.minutes)
        used = min((mock.frozen_at - started).total_seconds(), mock.minutes * 60)
        probes = DRILLS[mock.prompt].probes if mock.prompt in DRILLS else ()
        seen = read_grade(
            tests, kinds, used, mock.minutes, ledger_filled(text), len(probe_answers(text, probes))
        )
        return self._record_grade(mock, seen.passed, seen.run, seen.first_wrong, seen.evidence)

    def _record_grade(
        self, mock: MockRecord, passed: int, run: int, first: str | None, seen: dict[str, str]
    ) -> MockRecord:
        evidence = "\n".join(f"{key}={value}" for key, value in seen.items())
        self.bench.store.grade_mock(mock.id, passed, run, first, evidence)
        return next(m for m in self.bench.store.mocks() if m.id == mock.id)

    def repair_after(self, mock: MockRecord) -> str | None:
        """The kit's rule 7 for a failed model mock: its first failed owner's drill (a P
        drill), else the build itself (an M owner); None for a mock with no failure."""
        from .grader import repair_drills

        if mock.kind != MODEL_KIND or not mock.first_wrong:
            return None
        drills = repair_drills(mock.first_wrong, MODEL_PROMPTS[mock.prompt].package)
        return drills[0] if drills else mock.owner

    def score(self, scores: dict[str, int]) -> MockRecord:
        """The learner's 0-4 scores of the latest graded mock (merged with earlier ones)."""
        graded = [m for m in self.bench.store.mocks() if m.tests_run is not None]
        if not graded:
            raise RefusedError("no graded mock to score yet: `mock --start`")
        mock = graded[-1]
        wrong = sorted(set(scores) - set(rubric_keys(mock)))
        if wrong:
            rubric = "the model-build rubric" if mock.kind == MODEL_KIND else "the coding rubric"
            raise RefusedError(
                f"mock {mock.id} is scored on {rubric} ({', '.join(rubric_keys(mock))}):"
                f" not {', '.join(wrong)}"
            )
        merged = {**mock_scores(mock), **scores}
        self.bench.store.score_mock(mock.id, ",".join(f"{k}={v}" for k, v in merged.items()))
        return next(m for m in self.bench.store.mocks() if m.id == mock.id)
