"""`watch`: real file writes re-check the stage; the screen ticks on a fake clock."""

from __future__ import annotations

import io
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from gptlab_practice.cli import Practice
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
