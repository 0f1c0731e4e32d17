"""`status --gates`: the readiness gates from the record, turning met as their evidence
lands (a clean later-day re-solve of P03), with the attempt and day that meet them; a gate
the project cannot see is listed as self-scored. On a fake clock."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gptlab_practice.sheet import LEDGER
from gptlab_practice.store import STORE_NAME, Store

pytestmark = [pytest.mark.extension, pytest.mark.owner("practice")]

Practise = Any
FakeClock = Any


def solve(home: Path, drill: str, code: str) -> None:
    """The attempt with its ledger filled and the code under the header."""
    attempt = home / f"{drill.lower()}_attempt.py"
    text = attempt.read_text()
    for field in LEDGER:
        text = text.replace(f"# {field}\n# >\n", f"# {field}\n# > stated for {field}\n")
    attempt.write_text(text + code)


def gate(out: str, name: str) -> str:
    return next(line for line in out.splitlines() if name in line).strip()


def test_gates_turn_met_as_their_evidence_lands(
    practise: Practise, home: Path, clock: FakeClock, paste: Callable[[str], str]
) -> None:
    first = practise("status", "--gates").out
    assert first.startswith("readiness gates: 1 of ")  # only "no P drill has missed"
    assert (
        gate(first, "P03 has a clean")
        == "[open] P03 has a clean later-day re-solve: P03: no attempt yet"
    )
    assert "[self] one Triton kernel explained end to end: self-scored" in first

    assert practise("start", "P03").code == 0
    solve(home, "P03", paste("P03"))
    assert practise("check", "P03").code == 0
    day1 = practise("status", "--gates").out
    assert "[open] P03 has a clean later-day re-solve: P03: attempt 1 is the first" in day1

    clock.advance(days=1)
    assert practise("start", "P03").code == 0
    solve(home, "P03", paste("P03"))
    assert practise("check", "P03").code == 0
    day2 = practise("status", "--gates").out
    assert (
        gate(day2, "P03 has a clean")
        == "[met ] P03 has a clean later-day re-solve: P03: attempt 2, 2026-12-02"
    )
    assert "readiness gates: 2 of " in day2

    with Store(home / STORE_NAME) as store:  # a P19 miss: the drills gate opens
        now = clock()
        attempt = store.start_attempt("P19", home / "p19_attempt.py", now, 45, 1)
        check = store.begin_check(attempt, 1, now)
        store.finish_check(check, [(1, "failed", 3, 1, "p19", "why")], 1.0, now, {}, None)
    missed = gate(practise("status", "--gates").out, "every P drill")
    assert missed.startswith("[open]") and missed.endswith(
        "not yet re-solved clean on a later day: P19"
    )
