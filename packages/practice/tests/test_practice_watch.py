"""`watch`: real file writes re-check the stage; the screen ticks on a fake clock. A save is
not a decision (a failing save records no miss until the stage's budget has run out), and
one save that covers several stages advances through all of them."""

from __future__ import annotations

import io
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from gptlab_practice.commands import Practice
from gptlab_practice.watch import Screen, watch

pytestmark = [pytest.mark.extension, pytest.mark.owner("practice")]

ROOT = Path(__file__).resolve().parents[3]
FakeClock = Any


def text_of(screen: Screen) -> str:
    console = Console(file=io.StringIO(), width=120, record=True)
    console.print(screen.render())
    return console.export_text()


def test_each_save_is_checked_and_the_screen_shows_verdict_and_budget(
    home: Path, clock: FakeClock, drills: dict[str, str]
) -> None:
    lines: list[str] = []
    practice = Practice(home, ROOT, clock, lines.append)
    practice.start("P19", new=False)
    attempt = home / "p19_attempt.py"
    header = attempt.read_text()
    stop, ready, checked = threading.Event(), threading.Event(), threading.Semaphore(0)
    seen: list[tuple[str, str, float]] = []

    def on_check(screen: Screen) -> None:
        seen.append((screen.state, text_of(screen), time.perf_counter()))
        checked.release()

    saves: list[float] = []

    def learner() -> None:
        try:
            assert ready.wait(30)
            clock.advance(minutes=10)
            saves.append(time.perf_counter())
            attempt.write_text(header + "def decode_attention(q, k, v, lengths):\n    return q\n")
            assert checked.acquire(timeout=120)
            clock.advance(minutes=40)  # 50 of 45 minutes: over budget
            saves.append(time.perf_counter())
            attempt.write_text(header + drills["P19"])
            assert checked.acquire(timeout=120)
        finally:
            stop.set()

    writer = threading.Thread(target=learner)
    writer.start()
    console = Console(file=io.StringIO(), width=120)
    try:
        code = watch(practice, "P19", console=console, stop=stop, ready=ready, on_check=on_check)
    finally:
        writer.join()
        practice.close()
    assert code == 0
    assert [state for state, _, _ in seen] == ["FAIL", "PASS"]
    failed, passed = seen[0][1], seen[1][1]
    assert "P19 attempt 1  stage 1/1  (active)" in failed
    assert "time left: 35m00s of 45m" in failed
    assert "first failing owner: p19" in failed and "last verdict: FAIL" in failed
    assert "last verdict: PASS" in passed and "P19 stage 1/1: PASS" in passed
    assert "50m00s of 45m (over budget)" in passed
    latencies = [done - saved for (_, _, done), saved in zip(seen, saves, strict=True)]
    print(f"save to verdict: {', '.join(f'{s:.1f} s' for s in latencies)}")


def drive(
    practice: Practice, name: str, saves: list[tuple[float, str]], attempt: Path
) -> list[str]:
    """Watch `name` while a second thread writes each (minutes later, text) save for real."""
    clock = practice.clock
    stop, ready, checked = threading.Event(), threading.Event(), threading.Semaphore(0)
    states: list[str] = []

    def learner() -> None:
        try:
            assert ready.wait(30)
            for minutes, text in saves:
                clock.advance(minutes=minutes)  # type: ignore[attr-defined]
                attempt.write_text(text)
                assert checked.acquire(timeout=120)
        finally:
            stop.set()

    def on_check(screen: Screen) -> None:
        states.append(screen.state)
        checked.release()

    writer = threading.Thread(target=learner)
    writer.start()
    try:
        console = Console(file=io.StringIO(), width=120)
        watch(practice, name, console=console, stop=stop, ready=ready, on_check=on_check)
    finally:
        writer.join()
    return states


def store_rows(home: Path, sql: str) -> list[tuple[object, ...]]:
    with sqlite3.connect(home / "practice.sqlite3") as db:
        return db.execute(sql).fetchall()


def test_a_failing_save_then_a_passing_one_records_no_miss(
    home: Path, clock: FakeClock, drills: dict[str, str]
) -> None:
    practice = Practice(home, ROOT, clock, lambda line: None)
    practice.start("P19", new=False)
    attempt = home / "p19_attempt.py"
    header = attempt.read_text()
    half_written = header + "def decode_attention(q, k, v, lengths):\n    return q  # TODO\n"
    try:
        states = drive(practice, "P19", [(5, half_written), (10, header + drills["P19"])], attempt)
    finally:
        practice.close()
    assert states == ["FAIL", "PASS"]
    assert store_rows(home, "SELECT outcome, failed_owner FROM checks") == [
        ("failed", "p19"),  # the save is recorded as a check...
        ("passed", None),
    ]
    assert store_rows(home, "SELECT first_wrong_owner FROM attempts") == [(None,)]  # ...not a miss
    assert store_rows(home, "SELECT count(*) FROM reviews") == [(0,)]  # nothing scheduled


def test_a_failing_save_after_the_budget_is_a_decision(home: Path, clock: FakeClock) -> None:
    practice = Practice(home, ROOT, clock, lambda line: None)
    practice.start("P19", new=False)
    attempt = home / "p19_attempt.py"
    wrong = attempt.read_text() + "def decode_attention(q, k, v, lengths):\n    return q\n"
    try:
        assert drive(practice, "P19", [(46, wrong)], attempt) == ["FAIL"]  # 46 of 45 minutes
    finally:
        practice.close()
    assert store_rows(home, "SELECT first_wrong_owner FROM attempts") == [("p19",)]
    assert store_rows(home, "SELECT count(*) FROM reviews") == [(4,)]


def test_one_save_covering_three_stages_advances_three_stages(
    home: Path, clock: FakeClock, partial_attempt: Callable[[str, int], str]
) -> None:
    practice = Practice(home, ROOT, clock, lambda line: None)
    practice.start("kv_cache", new=False)
    attempt = home / "kv_cache_attempt.py"
    header = attempt.read_text()
    try:  # stages 1-3 built (from_past_key_values is stage 4's): one save
        states = drive(
            practice, "kv_cache", [(5, header + partial_attempt("kv_cache", 3))], attempt
        )
    finally:
        practice.close()
    assert states == ["FAIL"]  # stage 4 fails: its budget is not spent, so no decision
    assert store_rows(home, "SELECT stage, outcome FROM checks") == [
        (1, "passed"),
        (2, "passed"),
        (3, "passed"),
        (4, "failed"),
    ]
    assert store_rows(home, "SELECT stage, first_wrong_owner FROM attempts") == [(4, None)]
