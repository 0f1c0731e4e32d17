"""`mock`: drawn by the sampler (an unresolved owner first, else a mock-eligible case of the
weakest clean family), run to its declared deadline, the attempt copied there and the copy
graded through the judge; an edit after the deadline changes nothing. The rubric shows what
the machine saw beside the learner's 0-4 scores, the total /28 and its band; the mock log
keeps the frozen score. On a fake clock; cases are read from the catalogue."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from gptlab_practice.commands import Practice
from gptlab_practice.mock import band
from gptlab_practice.sheet import LEDGER

pytestmark = [pytest.mark.extension, pytest.mark.owner("practice")]

ROOT = Path(__file__).resolve().parents[3]
Practise = Any
FakeClock = Any


@pytest.mark.parametrize(
    ("scores", "named"),
    [
        ((4, 4, 4, 4, 4, 4, 4), "ready"),
        ((4, 4, 4, 4, 4, 3, 1), "no band"),  # 24 with a dimension below 2
        ((3, 3, 3, 3, 3, 3, 1), "19-23"),
        ((2, 2, 2, 3, 3, 3, 3), "13-18"),
        ((2, 2, 2, 2, 2, 1, 1), "0-12"),
    ],
)
def test_the_bands_follow_the_kit(scores: tuple[int, ...], named: str) -> None:
    assert band(dict(zip("abcdefg", scores, strict=True)))[0] == named


DESCRIBE = ROOT / "packages" / "drills" / "src" / "gptlab_drills" / "_describe.py"


def standalone(text: str) -> str:
    """A drill's reference as a file of its own: the judge refuses an attempt that reaches
    for this project's packages, so the one shared helper is written out in it."""
    helper = DESCRIBE.read_text().replace("from __future__ import annotations\n", "")
    text = text.replace("from gptlab_drills._describe import described\n", helper)
    if "gptlab_drills" in text:
        pytest.skip("the drawn case's reference imports other drills (not standalone)")
    return text


def test_a_mock_freezes_at_its_deadline_and_logs_its_score_and_band(
    home: Path, clock: FakeClock, practise: Practise, paste: Callable[[str], str]
) -> None:
    said: list[str] = []
    practice = Practice(home, ROOT, clock, said.append)
    try:
        draw = practice.mocks.draw()
        assert draw.case is not None and draw.case.mock_eligible and draw.case.family
        case = draw.case
        attempt = home / f"{case.key}_attempt.py"
        faithful: list[str] = []

        def work_until_the_deadline(seconds: float) -> None:
            """The learner's minutes: a faithful solution with its ledger, then time runs out."""
            if not faithful:
                text = attempt.read_text()
                for field in LEDGER:
                    text = text.replace(f"# {field}\n# >\n", f"# {field}\n# > {field} stated\n")
                faithful.append(text + standalone(paste(case.id)))
                attempt.write_text(faithful[0])
            clock.advance(minutes=seconds / 60)

        practice.wait = work_until_the_deadline
        assert practice.mock(True, {}) == 0
        out = "\n".join(said)
        mock = practice.store.mocks()[-1]
        assert mock.prompt == case.id and mock.minutes == min(case.minutes, 60)
        assert mock.frozen_at == mock.deadline  # copied at the deadline, not later
        assert mock.tests_run and mock.tests_passed == mock.tests_run, out
        assert "graded by the judge" in out and "score yourself (0 of 7 given)" in out
        assert "minutes used" in out and "ledger filled" in out

        attempt.write_text(
            attempt.read_text() + "\nraise SystemExit('edited after the deadline')\n"
        )
        frozen = Path(mock.frozen_file or "")
        assert frozen.read_text() == faithful[0]  # the copy is the deadline's
        again = practice.mocks.grade(mock.id)  # graded again: the copy, not the attempt
        assert (again.tests_passed, again.tests_run) == (mock.tests_passed, mock.tests_run)
    finally:
        practice.close()

    scored = practise(
        "mock", *(f"--score={key}={n}" for key, n in zip(
            ("contract", "tensor", "numerics", "implementation", "testing", "performance",
             "communication"), (4, 4, 3, 4, 3, 3, 3), strict=True))
    )  # fmt: skip
    assert scored.code == 0, scored.err
    assert "total 24/28: band ready; next: ready for this shape" in scored.out
    clock.advance(minutes=5)
    log = practise("mock").out
    assert f"mock 1 {case.id} PT owner {case.owner}" in log
    assert f"frozen score {mock.tests_passed}/{mock.tests_run}, 24/28" in log
    assert clock() > mock.deadline + timedelta(minutes=1)
    gates = practise("status", "--gates").out
    met = "[met ] one more mock or unseen PT reaches >= 24/28 with every dimension >= 2"
    assert f"{met}: mock 1 ({case.id})" in gates
