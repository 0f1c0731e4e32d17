"""A fake clock and a `practise` runner: the CLI in-process, on a temporary home."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from gptlab_practice.cli import main

ROOT = Path(__file__).resolve().parents[3]


@dataclass
class FakeClock:
    now: datetime = field(default_factory=lambda: datetime(2026, 12, 1, 9, 0, tzinfo=UTC))

    def __call__(self) -> datetime:
        return self.now

    def advance(self, *, minutes: float = 0, days: int = 0) -> None:
        self.now += timedelta(minutes=minutes, days=days)


@dataclass
class Run:
    code: int
    out: str
    err: str


Practise = Callable[..., Run]


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "practice"


@pytest.fixture
def practise(home: Path, clock: FakeClock, capsys: pytest.CaptureFixture[str]) -> Practise:
    """practise("check", "--all") -> Run(exit code, stdout, stderr)."""

    def run(*argv: str) -> Run:
        capsys.readouterr()
        code = main(["--home", str(home), "--root", str(ROOT), *argv], clock=clock)
        captured = capsys.readouterr()
        return Run(code, captured.out, captured.err)

    return run
