"""Model rounds in `mock` (the kit's sampler rules 2, 5, 6 and 7), `mock --abandon`, and the
model-construction ratio. On a fake clock. The judge is replaced by a recorded `grade --json`
report here (the real judged run of a frozen copy is `test_practice_mock.py`'s): what is
checked is the round's draw, its full time, the frozen copy, the rubric evidence read per
dimension, the log, rule 7's next step and the ratio gate."""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from gptlab_practice import mock_desk
from gptlab_practice.commands import Practice
from gptlab_practice.mock import ModelDraw, model_ratio
from gptlab_practice.store import MockRecord, Store

pytestmark = [pytest.mark.extension, pytest.mark.owner("practice")]

ROOT = Path(__file__).resolve().parents[3]
FakeClock = Any
Practise = Any

# A `grade modern_lm frozen.py --json` report as the grader writes it: two contract tests
# (one failing on RoPE), and its `rubric` rows for M02.
RUBRIC_ROWS: list[dict[str, object]] = [
    {"build": "M02", "dimension": "contract & config", "passed": 3, "run": 3, "failed_owners": []},
    {"build": "M02", "dimension": "numerical correctness", "passed": 1, "run": 2,
     "failed_owners": ["modern_rope"]},
    {"build": "M02", "dimension": "complete forward path", "passed": 2, "run": 2,
     "failed_owners": []},
    {"build": "M02", "dimension": "inference reasoning", "passed": 0, "run": 0,
     "failed_owners": []},
]  # fmt: skip
TESTS: list[dict[str, object]] = [
    {"kind": "contract", "outcome": "passed", "owner": "modern_config"},
    {"kind": "contract", "outcome": "failed", "owner": "modern_rope"},
]


def graded_pt_round(store: Store, when: Any) -> None:
    """A PT round already graded (the record a finished `mock --start` leaves)."""
    attempt = store.start_attempt("PT01", Path("/nowhere/pt01_attempt.py"), when, 30, 1)
    mock_id = store.start_mock(
        MockRecord(attempt, "PT01", "PT", "P01", "drawn", 30, when + timedelta(minutes=30))
    )
    store.freeze_mock(mock_id, Path("/nowhere/mock1_pt01_frozen.py"), when)
    store.grade_mock(mock_id, 5, 5, None, "contract=5/5 tests of its clauses passed")


def test_a_model_round_follows_a_pt_round_and_is_graded_on_the_build_rubric(
    home: Path, clock: FakeClock, practise: Practise, monkeypatch: pytest.MonkeyPatch
) -> None:
    judged: list[str] = []

    def recorded_judge(root: Path, target: str, frozen: Path, report: Path) -> Any:
        judged.append(target)
        assert frozen.read_text() == written[0]  # the deadline's copy is what is graded
        return TESTS, RUBRIC_ROWS

    monkeypatch.setattr(mock_desk, "judge", recorded_judge)
    said: list[str] = []
    practice = Practice(home, ROOT, clock, said.append)
    written: list[str] = []
    try:
        assert not isinstance(practice.mocks.draw(), ModelDraw)  # the first round: a PT
        graded_pt_round(practice.store, clock())
        draw = practice.mocks.draw()
        assert isinstance(draw, ModelDraw) and draw.mock.letter == "A", draw
        assert "a model round after a PT round" in draw.why

        attempt = home / "modern_lm_attempt.py"

        def work(seconds: float) -> None:
            if not written:
                written.append(attempt.read_text() + "\nclass ModernLM: ...\n")
                attempt.write_text(written[0])
            clock.advance(minutes=seconds / 60)

        practice.wait = work
        began = clock()
        assert practice.mock(True, {}) == 0
        attempt.write_text("edited after the deadline\n")
        out = "\n".join(said)
        mock = practice.store.mocks()[-1]
        assert (mock.prompt, mock.kind, mock.owner, mock.minutes) == ("model-A", "model", "M02", 60)
        assert mock.frozen_at == began + timedelta(minutes=60) and judged == ["modern_lm"]
        assert (mock.tests_passed, mock.tests_run, mock.first_wrong) == (1, 2, "modern_rope")
        assert "the model-build rubric: what the machine saw" in out
        assert "numerics        1/2 contract tests passed; failed: modern_rope" in out
        assert "inference       no test sees it: your own score" in out
        assert "failed: the first failed owner, modern_rope: next `start P15`" in out  # rule 7
        assert model_ratio(practice.store.mocks()) == (1, 2)
    finally:
        practice.close()

    wrong = practise("mock", "--score", "contract=3")
    assert wrong.code == 1 and "the model-build rubric" in wrong.err  # not the coding rubric
    keys = ("config", "ownership", "tensor", "numerics", "forward", "tests", "inference")
    scored = practise("mock", *(f"--score={k}=3" for k in keys))
    assert scored.code == 0, scored.err
    assert "total 21/28: band not ready" in scored.out
    log = practise("mock").out
    assert "mock 2 model-A model owner M02, 60m, frozen score 1/2, 21/28" in log
    assert "model-construction ratio: 1 of 2 graded rounds ran a module end to end" in log
    gates = practise("status", "--gates").out
    assert "[met ] model-construction ratio" in gates


def test_model_mock_c_keeps_its_full_75_minutes(home: Path, clock: FakeClock) -> None:
    from gptlab_practice.mock import model_draw

    with Store(home / "practice.sqlite3") as store:
        graded_pt_round(store, clock())
        earlier = store.mocks()
    chosen = model_draw(earlier, ["runtime_lm", "moe_lm"])  # A and B not installed here
    assert chosen is not None and chosen.mock.letter == "C" and chosen.mock.minutes == 75
    assert "A (M02 modern_lm not installed)" in chosen.why


def test_an_interrupted_mock_is_abandoned_and_a_new_one_can_start(
    home: Path, clock: FakeClock, practise: Practise
) -> None:
    said: list[str] = []
    practice = Practice(home, ROOT, clock, said.append)
    try:
        record, _ = practice.mocks.start()  # `mock --start` killed before its deadline
    finally:
        practice.close()
    refused = practise("mock", "--start")
    assert refused.code == 1 and "`mock --abandon` closes it" in refused.err
    clock.advance(minutes=7)
    closed = practise("mock", "--abandon")
    assert closed.code == 0 and f"mock {record.id}" in closed.out and "abandoned" in closed.out
    log = practise("mock").out
    assert f"mock {record.id} {record.prompt}" in log and ", abandoned," in log
    again = practise("mock", "--abandon")
    assert again.code == 1 and "no mock is open" in again.err


def test_a_build_s_check_shows_the_rubric_evidence_and_keeps_the_learner_s_scores(
    practise: Practise, home: Path, partial_attempt: Any
) -> None:
    """Issue 66: after `check` of a model build, the machine's evidence per model-build rubric
    dimension (the check's own tests, each in its owner's dimension) beside the learner's
    0-4 scores, stored with the check; ready at 24/28 with none below 2."""
    assert practise("start", "M02").code == 0
    attempt = home / "modern_lm_attempt.py"
    attempt.write_text(attempt.read_text() + partial_attempt("modern_lm", 2))
    first = practise("check", "M02", "--all", "--score", "forward=4", "--score", "config=1")
    assert first.code == 0, first.out + first.err
    assert "model-build rubric, M02: what this check's tests saw" in first.out
    evidence = [line for line in first.out.splitlines() if " contract tests passed" in line]
    assert evidence and all(line.split()[1].split("/")[0] == line.split()[1].split("/")[1]
                            for line in evidence), evidence  # fmt: skip
    assert "| 4  (complete forward path)" in first.out and "| 1  (contract & config)" in first.out
    assert "score yourself (2 of 7 given)" in first.out
    rest = ("ownership=4", "tensor=4", "numerics=4", "tests=4", "inference=4")
    again = practise("check", "M02", *(f"--score={s}" for s in rest))  # the finished build
    assert again.code == 0, again.out + again.err
    assert "yours: 25/28; below 2: config: not ready" in again.out  # the earlier scores kept
    ready = practise("check", "M02", "--score", "config=3")
    assert "yours: 27/28, none below 2: ready" in ready.out
    refused = practise("start", "P03")
    assert refused.code == 0
    drill = practise("check", "P03", "--score", "forward=3")
    assert drill.code == 1 and "not a model build" in drill.err


@pytest.mark.slow
def test_a_model_round_is_judged_for_real(
    home: Path, clock: FakeClock, partial_attempt: Any
) -> None:
    """The same round through the real judge (`grade modern_lm <copy> --json`, about 45 s):
    a learner who built M02's first slice only; the rubric rows come from grade itself."""
    said: list[str] = []
    practice = Practice(home, ROOT, clock, said.append)
    try:
        graded_pt_round(practice.store, clock())
        attempt = home / "modern_lm_attempt.py"

        def work(seconds: float) -> None:
            if "class ModernLM" not in attempt.read_text():
                attempt.write_text(attempt.read_text() + partial_attempt("modern_lm", 1))
            clock.advance(minutes=seconds / 60)

        practice.wait = work
        assert practice.mock(True, {}) == 0
        mock = practice.store.mocks()[-1]
        out = "\n".join(said)
        assert mock.kind == "model" and mock.tests_run and 0 < mock.tests_passed < mock.tests_run
        assert mock.first_wrong and mock.first_wrong.startswith("modern_"), out
        assert re.search(r"tensor +(\d+)/\1 contract tests passed", out), out  # the layer holds
        assert "forward         " in out and "failed: modern_decoder" in out
        assert model_ratio(practice.store.mocks()) == (1, 2)
    finally:
        practice.close()
