"""What a mock does to the record: the draw, the round's start, the copy at the deadline,
the judge's grade of the copy, the learner's rubric scores. Prints nothing."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from pathlib import Path

from gptlab_drills.catalogue import DRILLS

from .errors import RefusedError
from .items import item_named
from .mock import MOCK_MINUTES, clause_kinds, judge, mock_draw, mock_scores, read_grade
from .sampler import Draw, history_of, unresolved_items
from .store import MockRecord
from .workbench import Started, Workbench


class MockDesk:
    """Mocks over one workbench's record."""

    def __init__(self, bench: Workbench) -> None:
        self.bench = bench

    def running(self) -> MockRecord | None:
        """The mock whose attempt is not frozen yet."""
        return next((m for m in self.bench.store.mocks() if m.frozen_file is None), None)

    def draw(self) -> Draw:
        """The kit's sampler: an unresolved owner's canonical drill first; else a
        mock-eligible case of the weakest clean family, by the exclusions."""
        unresolved = sorted(i for i in unresolved_items(self.bench.store) if i in DRILLS)
        if unresolved:
            case = DRILLS[unresolved[0]]
            return Draw(case, f"{case.id} is an unresolved owner: its canonical drill first")
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
                f"mock {running.id} ({running.prompt}) is still open: it is frozen when its"
                " `mock --start` reaches the deadline"
            )
        draw = self.draw()
        if draw.case is None:
            raise RefusedError(f"nothing to draw: {draw.why}")
        started = self.bench.start(item_named(draw.case.id), new=False)
        now = self.bench.clock()
        minutes = min(draw.case.minutes, MOCK_MINUTES)
        kind = "PT" if draw.case.id.startswith("PT") else "P"
        owner = draw.case.owner or draw.case.id
        attempt = self.bench.store.attempts(draw.case.id)[-1]
        record = MockRecord(
            attempt.id, draw.case.id, kind, owner, draw.why, minutes,
            now + timedelta(minutes=minutes),
        )  # fmt: skip
        mock_id = self.bench.store.start_mock(record)
        return replace(record, id=mock_id), started

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
        tests = judge(self.bench.root, mock.prompt, frozen, frozen.with_suffix(".json"))
        readme = self.bench.root / "packages" / "drills" / "README.md"
        kinds = clause_kinds(readme)
        text = frozen.read_text(encoding="utf-8", errors="replace")
        started = mock.deadline - timedelta(minutes=mock.minutes)
        used = min((mock.frozen_at - started).total_seconds(), mock.minutes * 60)
        probes = DRILLS[mock.prompt].probes if mock.prompt in DRILLS else ()
        seen = read_grade(
            tests, kinds, used, mock.minutes, ledger_filled(text), len(probe_answers(text, probes))
        )
        evidence = "\n".join(f"{key}={value}" for key, value in seen.evidence.items())
        self.bench.store.grade_mock(mock.id, seen.passed, seen.run, seen.first_wrong, evidence)
        return next(m for m in self.bench.store.mocks() if m.id == mock_id)

    def score(self, scores: dict[str, int]) -> MockRecord:
        """The learner's 0-4 scores of the latest graded mock (merged with earlier ones)."""
        graded = [m for m in self.bench.store.mocks() if m.tests_run is not None]
        if not graded:
            raise RefusedError("no graded mock to score yet: `mock --start`")
        mock = graded[-1]
        merged = {**mock_scores(mock), **scores}
        self.bench.store.score_mock(mock.id, ",".join(f"{k}={v}" for k, v in merged.items()))
        return next(m for m in self.bench.store.mocks() if m.id == mock.id)
