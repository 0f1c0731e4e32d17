"""Every command answers a bad argument at once (before torch, before the store), in one
line naming the argument, with the usage exit status 2."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from gptlab_practice.cli import main

pytestmark = [pytest.mark.extension, pytest.mark.owner("practice")]

BAD = [
    (["start", "--bogus"], "--bogus"),
    (["check", "--timeout", "soon"], "argument --timeout"),
    (["check", "--workers", "many"], "argument --workers"),
    (["check", "--score", "contract=3"], "argument --score"),
    (["repair", "--bogus"], "--bogus"),
    (["watch", "--bogus"], "--bogus"),
    (["due", "--bogus"], "--bogus"),
    (["reveal", "--bogus"], "--bogus"),
    (["status", "--gates=yes"], "--gates"),
    (["history", "--bogus"], "--bogus"),
    (["diagnose", "--self", "kv_capacity"], "argument --self"),
    (["diagnose", "--self", "request_path=9"], "argument --self"),
    (["today", "--day", "0"], "argument --day"),
    (["plan", "--bogus"], "--bogus"),
    (["mock", "--score", "speed=3"], "argument --score"),
    (["mock", "--score", "contract=5"], "argument --score"),
    (["mock", "--score", "forward=9"], "argument --score"),
    (["mock", "--abandon=yes"], "--abandon"),
    (["log", "--csv", "--markdown"], "argument --markdown"),
    (["--home", "", "status"], "argument --home"),
]


@pytest.mark.parametrize(("argv", "named"), BAD, ids=[" ".join(a) for a, _ in BAD])
def test_a_bad_argument_is_answered_at_once_naming_it(
    argv: list[str], named: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    began = time.perf_counter()
    with pytest.raises(SystemExit) as usage:
        main(["--home", str(tmp_path / "home"), *argv] if argv[0] != "--home" else argv)
    took = time.perf_counter() - began
    assert usage.value.code == 2
    assert named in capsys.readouterr().err
    assert took < 1.0
    assert not (tmp_path / "home").exists()  # nothing written


def test_start_and_score_together_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--home", str(tmp_path), "mock", "--start", "--score", "contract=3"]) == 2
    assert "--start and --score" in capsys.readouterr().err


def test_abandon_with_start_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--home", str(tmp_path), "mock", "--abandon", "--start"]) == 2
    assert "--abandon alone" in capsys.readouterr().err
