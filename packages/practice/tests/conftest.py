"""A fake clock and a `practise` runner: the CLI in-process, on a temporary home."""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import cache
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


DRILL_SOURCES = ROOT / "packages" / "drills" / "src" / "gptlab_drills"


def pasted(drill: str) -> str:
    """A drill's reference as a learner would paste it into an attempt: its own text, the one
    relative imports made absolute (an attempt is a plain file, not part of the package). It
    follows the drill's contract as it grows, where a copy kept here would fall behind."""
    text = (DRILL_SOURCES / f"{drill.lower()}.py").read_text(encoding="utf-8")
    return re.sub(r"^from \.(\w+) import", r"from gptlab_drills.\1 import", text, flags=re.M)


@pytest.fixture
def drills() -> dict[str, str]:
    """{"P19": faithful attempt text, "PT17": ...}."""
    return {"P19": pasted("P19"), "PT17": pasted("PT17")}


@pytest.fixture
def paste() -> Callable[[str], str]:
    """paste("P06"): any drill's reference as an attempt's text."""
    return pasted


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


@cache
def _partial_attempts() -> object:
    """tests/partial_attempts.py (test folders are not packages: loaded by path)."""
    spec = importlib.util.spec_from_file_location(
        "practice_partial_attempts", Path(__file__).with_name("partial_attempts.py")
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def partial_attempt() -> Callable[[str, int], str]:
    """partial_attempt("kv_cache", 3): the attempt text after building stages 1..3 only."""
    build: Callable[[str, int], str] = _partial_attempts().partial  # type: ignore[attr-defined]
    return build


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "slow: a test of many grader runs (minutes)")
