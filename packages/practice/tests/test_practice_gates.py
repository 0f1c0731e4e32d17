"""`status --gates`: the readiness gates from the record, turning met as their evidence
lands (a clean later-day re-solve of P03), with the attempt and day that meet them; a gate
the project cannot see is listed as self-scored. On a fake clock."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gptlab_practice.sheet import LEDGER
from gptlab_practice.store import STORE_NAME, RouteRecord, Store

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


@pytest.mark.parametrize("route", ["14-day", "intermediate", "7-day"])
def test_each_route_has_its_own_gate_list(
    route: str, practise: Practise, home: Path, clock: FakeClock
) -> None:
    """The intermediate route skips day 11 (its prefix-cache gate goes); the 7-day route's
    builds are M01-M04 with a scaffolded advanced M03 and a port of a supplied M02, with no
    reconstructions, M05, M10 or prefix cache (this project's reading of those routes)."""
    home.mkdir(parents=True, exist_ok=True)
    with Store(home / STORE_NAME) as store:
        store.set_route(RouteRecord(clock(), "2026-12-01", route, (), (), "advanced"))
    out = practise("status", "--gates").out
    assert f"the {route} route's list)" in out.splitlines()[0]
    has = {
        "prefix-cache": "the prefix-cache suite passes" in out,
        "layer reconstruction": "M02's 45-minute layer reconstruction" in out,
        "M10 re-solve": "M10 reaches logits in 75 minutes (its re-solve)" in out,
        "scaffolded M03": "M03 (scaffolded, advanced) passes every stage" in out,
        "supplied M02": "M04 (a port of a supplied M02) keeps logits" in out,
    }
    expected = {
        "14-day": {"prefix-cache", "layer reconstruction", "M10 re-solve"},
        "intermediate": {"layer reconstruction", "M10 re-solve"},
        "7-day": {"scaffolded M03", "supplied M02"},
    }[route]
    assert {name for name, there in has.items() if there} == expected
    assert "model-construction ratio" in out and "P03 has a clean later-day re-solve" in out


def test_m03_s_gate_needs_its_build_and_its_reconstruction(
    practise: Practise, home: Path, clock: FakeClock
) -> None:
    home.mkdir(parents=True, exist_ok=True)
    with Store(home / STORE_NAME) as store:  # M03 passed every stage; no reconstruction yet
        now = clock()
        attempt = store.start_attempt("cache_aware_lm", home / "c.py", now, 20, 1)
        check = store.begin_check(attempt, 1, now)
        store.finish_check(check, [(1, "passed", 9, 0, None, "")], 1.0, now, {1: 20}, None)
    line = gate(practise("status", "--gates").out, "M03 passes one timed path")
    assert line.startswith("[open]") and "M03 cache_aware_lm: attempt 1 passed every stage" in line
    assert "cache_aware_lm:reconstruction: no attempt" in line
