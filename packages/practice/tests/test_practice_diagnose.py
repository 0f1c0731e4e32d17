"""`diagnose`: the baseline scored on five dimensions (three graded drills frozen at their
deadlines, two explain-aloud items the learner scores), the route picked by the kit's
thresholds, the days a zero protects, and M03's branch frozen from P19. On a fake clock."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gptlab_practice.route import DIMENSIONS, FULL, INTERMEDIATE, SEVEN_DAY, pick_route

pytestmark = [pytest.mark.extension, pytest.mark.owner("practice")]

Practise = Any
FakeClock = Any


def scored(*values: int) -> dict[str, int]:
    return dict(zip(DIMENSIONS, values, strict=True))


@pytest.mark.parametrize(
    ("values", "route"),
    [
        ((0, 0, 0, 0, 0), FULL),
        ((3, 3, 1, 0, 0), FULL),  # 7
        ((3, 3, 1, 1, 0), INTERMEDIATE),  # 8
        ((3, 3, 3, 2, 0), INTERMEDIATE),  # 11
        ((3, 3, 3, 3, 0), INTERMEDIATE),  # 12 with a zero
        ((3, 3, 3, 2, 1), SEVEN_DAY),  # 12, no zero
        ((3, 3, 3, 3, 3), SEVEN_DAY),
    ],
)
def test_the_route_follows_the_kit_s_thresholds(values: tuple[int, ...], route: str) -> None:
    assert pick_route(scored(*values))[0] == route


def test_a_zero_protects_its_block() -> None:
    assert pick_route(scored(0, 3, 3, 3, 3))[1] == ("d1",)
    assert pick_route(scored(3, 0, 0, 3, 3))[1] == ("d2", "d3", "d4")
    assert pick_route(scored(3, 3, 3, 0, 0))[1] == ("d5", "d6", "d7", "d8", "d12", "d13")
    assert pick_route(scored(1, 1, 1, 1, 1))[1] == ()


def add_code(home: Path, drill: str, code: str) -> None:
    attempt = home / f"{drill.lower()}_attempt.py"
    attempt.write_text(attempt.read_text() + code)


def test_a_low_tensor_score_picks_the_14_day_route_and_protects_day_1(
    practise: Practise,
    home: Path,
    clock: FakeClock,
    paste: Callable[[str], str],
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert practise("start", "P03").code == 0
    clock.advance(minutes=25)  # past P03's 20-minute deadline: what passes now is too late
    add_code(home, "P03", paste("P03"))
    assert practise("check", "P03").code == 0
    assert practise("start", "P11").code == 0
    clock.advance(minutes=20)
    add_code(home, "P11", paste("P11"))
    assert practise("check", "P11").code == 0  # within its 35 minutes, clean

    shown = practise("diagnose").out
    assert "P03 20m -> tensor semantics: 0/3 (no check by its 20m deadline" in shown
    assert "P11 35m -> numerical correctness: 3/3 (passed by its 35m deadline" in shown
    assert "P19 45m -> model & attention mechanics: 0/3 (not attempted" in shown
    assert "3: both right, the memory budget and its reserve stated" in shown  # anchors

    refused = practise("diagnose", "--finish")
    assert refused.code == 1 and "--self kv_capacity=N --self request_path=N" in refused.err
    with pytest.raises(SystemExit) as bad:  # argparse's answer: usage, status 2
        practise("diagnose", "--self", "kv_capacity=4")
    assert bad.value.code == 2
    assert (
        "argument --self: 'kv_capacity=4': the score is an integer 0-3" in capsys.readouterr().err
    )

    done = practise("diagnose", "--self", "kv_capacity=2", "--self", "request_path=2", "--finish")
    assert done.code == 0, done.err
    assert "route recorded: 14-day (total 7/15)" in done.out
    assert "protected days: d1, d3, d4" in done.out
    assert "M03 branch (frozen from P19 at its deadline): simple" in done.out

    clock.advance(days=1)
    again = practise("diagnose", "--finish")
    assert again.code == 1 and "the route was fixed on 2026-12-01; it never changes" in again.err
    assert practise("diagnose", "--self", "kv_capacity=3").code == 1
    assert "route fixed on 2026-12-01: 14-day" in practise("diagnose").out
