"""The seed's loop end to end on a fake clock: fail a stage, repair in the owning drill,
resume the stage (its clock paused meanwhile), finish; the kit's re-solves fall due; a
clean re-solve on a later day with the ledger filled is *learned*. And a drill's own miss,
with its probes answered. Each check is a real grader run (about 2-4 s idle each)."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from gptlab_practice.sheet import LEDGER

pytestmark = [pytest.mark.extension, pytest.mark.owner("practice")]

ROOT = Path(__file__).resolve().parents[3]
FAITHFUL_TINYGPT = ROOT / "integration_tests" / "faithful" / "good_tinygpt_manual_softmax.py"
Practise = Any  # the conftest's runner: practise(*argv) -> Run(code, out, err)
FakeClock = Any
SQUARE_MASK = "torch.ones(T, P + T, dtype=torch.bool, device=x.device).triu(P + 1)"
# The rectangular-mask mistake: an upper-left triangle, right for prefill and one-token
# decode, wrong for a multi-token chunk after a cache.
UPPER_LEFT = (
    "(torch.ones(T, P + T, dtype=torch.bool, device=x.device).triu(1) if T > 1"
    " else torch.zeros(T, P + T, dtype=torch.bool, device=x.device))"
)


def tinygpt(*, rectangular: bool = True) -> str:
    text = FAITHFUL_TINYGPT.read_text()
    assert SQUARE_MASK in text
    return text if rectangular else text.replace(SQUARE_MASK, UPPER_LEFT)


def write_code(attempt: Path, code: str, *, ledger: bool = False, probes: str = "") -> None:
    """What a learner's editor would save: the header (ledger and probes answered) + code."""
    lines = [line for line in attempt.read_text().splitlines() if line.startswith("#")]
    text = "\n".join(lines) + "\n"
    if ledger:
        for field in LEDGER:
            text = text.replace(f"# {field}\n# >\n", f"# {field}\n# > stated for {field}\n")
    if probes:
        for number in (1, 2, 3):
            text = text.replace("?\n# >\n", f"?\n# > {probes} {number}\n", 1)
    attempt.write_text(text + code)


def rows(home: Path, sql: str) -> list[tuple[object, ...]]:
    with sqlite3.connect(home / "practice.sqlite3") as db:
        return list(db.execute(sql))


def test_fail_repair_in_pt17_resume_finish_and_learn_on_a_later_day(
    practise: Practise, home: Path, clock: FakeClock, drills: dict[str, str]
) -> None:
    assert practise("start", "tinygpt").code == 0
    attempt = home / "tiny_gpt_attempt.py"
    write_code(attempt, tinygpt(rectangular=False))
    clock.advance(minutes=8)
    failed = practise("check", "--all")
    assert failed.code == 1, failed.out
    for stage in range(1, 5):
        assert f"tinygpt stage {stage}/7: PASS" in failed.out
    assert "tinygpt stage 5/7: FAIL" in failed.out
    assert "first failing owner: rectangular_mask" in failed.out
    # Three failures are named, the rest counted: "5 of 101 failed" never reads as three.
    named = failed.out.count("\n  failed: ")
    total = int(failed.out.split("tinygpt stage 5/7: FAIL  ")[1].split(" of ")[0])
    assert named == min(total, 3)
    assert total <= 3 or f"  ... and {total - named} more failed" in failed.out
    assert "PT17 rectangular causal mask (35m)" in failed.out
    assert "start the first: `repair` (or `start PT17`)" in failed.out
    assert "re-solves scheduled: tinygpt 2026-12-01 (same day), tinygpt 2026-12-02" in failed.out

    clock.advance(minutes=10)
    repair = practise("repair")
    assert repair.code == 0, repair.err
    assert "PT17 attempt 1" in repair.out and "clock is paused" in repair.out
    drill = home / "pt17_attempt.py"
    clock.advance(minutes=30)
    write_code(drill, drills["PT17"])
    fixed = practise("check")
    assert fixed.code == 0, fixed.out
    assert "PT17 stage 1/1: PASS" in fixed.out
    assert "PT17 passed: resume tinygpt stage 5/7" in fixed.out

    clock.advance(minutes=5)
    write_code(attempt, tinygpt())
    done = practise("check", "--all")
    assert done.code == 0, done.out
    # 45 minutes on the wall since stage 5 opened, 30 of them in PT17: 15 on its clock
    assert "tinygpt stage 5/7: PASS" in done.out and "15m00s of 45m" in done.out
    assert "every stage passed" in done.out
    # one message about the next re-solve: the kit's spacing after the miss, as `due` says it
    same_day = "later the same day, after an unrelated task"
    assert f"Next re-solve: 2026-12-01, {same_day}, from an empty file" in done.out
    assert rows(home, "SELECT mechanism, kind, repair_of FROM attempts") == [
        ("tinygpt", "mechanism", None),
        ("PT17", "drill", 1),
    ]

    due = practise("due")
    assert f"2026-12-01  M01 tinygpt: re-solve {same_day}, from an empty file" in due.out
    assert "tinygpt attempt 1, rectangular_mask" in due.out
    status = practise("status").out
    line = next(line for line in status.splitlines() if line.startswith("M01 tinygpt"))
    assert "2026-12-01 (same day)" in line and "not yet" in line
    assert "note: tinygpt not learned yet: attempt 1 is the first" in status

    clock.advance(days=1)
    assert practise("start", "tinygpt").code == 0
    write_code(attempt, tinygpt(), ledger=True)
    clock.advance(minutes=8)  # within stage 1's 10 minutes; `--all` passes the rest at once
    again = practise("check", "--all")
    assert again.code == 0, again.out
    assert "ledger: not filled" not in again.out
    assert "unguarded: your code ran beside the tests" in again.out  # practice is in-process
    line = next(
        line for line in practise("status").out.splitlines() if line.startswith("M01 tinygpt")
    )
    assert "yes (attempt 2, 2026-12-02)" in line
    assert "2026-12-02 (next day)" in line  # the overdue same-day one was done today
    assert "2026-12-02  M01 tinygpt: re-solve the next day" in practise("due").out


def test_a_drill_miss_with_its_probes_answered(
    practise: Practise, home: Path, clock: FakeClock, drills: dict[str, str]
) -> None:
    P19 = drills["P19"]
    assert practise("start", "P19").code == 0
    attempt = home / "p19_attempt.py"
    assert "# probe 1:" in attempt.read_text() and "# shapes (name every" in attempt.read_text()
    unmasked = P19 + (  # the same function over every slot: the padding is attended too
        "\n\n_masked = decode_attention\n\n\n"
        "def decode_attention(q, k_cache, v_cache, lengths):\n"
        "    return _masked(q, k_cache, v_cache, torch.full_like(lengths, k_cache.shape[2]))\n"
    )
    write_code(attempt, unmasked)
    clock.advance(minutes=20)
    missed = practise("check", "--note", "thought zero-filled padding was harmless")
    assert missed.code == 1, missed.out
    assert "first wrong decision recorded: p19" in missed.out
    # the first clause its own tests broke, in the README's words (the padding is attended);
    # the signature and shape tests that fail on these values break no clause of their own
    assert "first wrong decision recorded: p19, first broken clause P19.4 (semantics)" in missed.out
    assert "  clauses broken: P19.4, P19.5, P19.6\n" in missed.out
    assert "re-solves scheduled: P19 2026-12-01 (same day)" in missed.out

    clock.advance(minutes=15)
    write_code(attempt, P19, ledger=True, probes="answered")
    passed = practise("check")
    assert passed.code == 0, passed.out
    assert "probe(s) unanswered" not in passed.out
    history = practise("history", "P19")
    assert "attempt 1 probe 1:" in history.out and "> answered 1" in history.out
    assert "p19 1" in history.out  # first wrong decisions by owner

    clock.advance(days=1)
    assert practise("start", "P19").code == 0
    write_code(attempt, P19, ledger=True)
    clock.advance(minutes=30)
    unanswered = practise("check")
    assert unanswered.code == 0 and "3 probe(s) unanswered" in unanswered.out
    write_code(attempt, P19, ledger=True, probes="afterwards")  # answered after the pass
    clock.advance(minutes=5)
    assert practise("check", "P19").code == 0  # the finished drill: records the answers
    assert "attempt 2 probe 3:" in practise("history", "P19").out
    assert rows(home, "SELECT status, finished_at FROM attempts WHERE id = 2") == [
        ("done", "2026-12-02T10:05:00+00:00")  # finished when it passed
    ]
    line = next(line for line in practise("status").out.splitlines() if line.startswith("P19"))
    assert "yes (attempt 2, 2026-12-02)" in line and "2026-12-02 (next day)" in line


def test_a_debug_case_starts_from_its_artifact_and_its_bug_is_not_the_learners_decision(
    practise: Practise, home: Path
) -> None:
    started = practise("start", "PT06")
    assert started.code == 0 and "supplied broken artifact" in started.out
    attempt = home / "pt06_attempt.py"
    assert "TinyDecoder" in attempt.read_text()  # the artifact's code under the header
    untouched = practise("check")
    assert untouched.code == 1 and "first failing owner: pt06" in untouched.out
    assert re.search(r"clauses broken: PT06\.\d+", untouched.out)  # the README's rules it broke
    assert "first wrong decision recorded" not in untouched.out
    attempt.write_text(attempt.read_text() + "\nLEARNER_WAS_HERE = True\n")
    edited = practise("check")
    assert "first wrong decision recorded: pt06" in edited.out
    assert rows(home, "SELECT started_from, first_wrong_owner FROM attempts") == [
        ("artifact", "pt06")
    ]


def test_watching_a_repair_drill_moves_to_the_stage_it_resumes_once_it_passes(
    home: Path, clock: FakeClock, drills: dict[str, str]
) -> None:
    from gptlab_practice.commands import Practice
    from gptlab_practice.watch import Screen

    practice = Practice(home, ROOT, clock, lambda line: None)
    try:
        practice.start("tinygpt", new=False)
        write_code(home / "tiny_gpt_attempt.py", tinygpt(rectangular=False))
        assert practice.check(None, True, None, {}) == 1  # stage 5: rectangular_mask
        practice.repair(None)
        screen = Screen(practice, "PT17")
        screen.follow()
        write_code(home / "pt17_attempt.py", drills["PT17"])

        screen.run_check(0.0)

        assert screen.state == "PASS"
        assert screen.attempt is not None and screen.attempt.mechanism == "tinygpt"
        assert screen.path == home / "tiny_gpt_attempt.py" and screen.attempt.stage == 5
        assert screen.note == ""
    finally:
        practice.close()
