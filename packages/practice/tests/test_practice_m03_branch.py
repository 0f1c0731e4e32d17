"""`start M03` follows the branch the diagnostic froze from P19 (on the fake clock): the
advanced branch binds M03 to `cache_aware_modern` (graded as CACHE_AWARE_MODERN_MODULE,
by cache_aware_lm's folder), the simple one and no route at all to cache_aware_lm; model
mock B and the M03 gate follow the same branch."""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path

import pytest

from gptlab_practice.gates import gates
from gptlab_practice.grader import unit_variable
from gptlab_practice.mock import model_draw
from gptlab_practice.model_mocks import model_mocks
from gptlab_practice.route import GRADED, Evidence, m03_branch
from gptlab_practice.stages import units
from gptlab_practice.store import STORE_NAME, RouteRecord, Store

pytestmark = [pytest.mark.extension, pytest.mark.owner("practice")]


def _route(home: Path, now: datetime, branch: str) -> None:
    """The route a finished diagnostic records (its M03 branch frozen from P19)."""
    home.mkdir(parents=True, exist_ok=True)
    store = Store(home / STORE_NAME)
    try:
        record = RouteRecord(now, now.date().isoformat(), "14-day", (), (), branch)
        store.set_route(record)
    finally:
        store.close()


def test_a_p19_passed_by_its_deadline_freezes_the_advanced_branch() -> None:
    p19 = next(item for item in GRADED if item.drill == "P19")
    assert m03_branch(Evidence(p19, 3, "passed", True)) == "advanced"
    assert m03_branch(Evidence(p19, 1, "not all", False)) == "simple"


def test_the_advanced_unit_is_graded_as_m03s_advanced_target() -> None:
    unit = units()["cache_aware_modern"]
    assert unit.kit_name == "M03" and unit_variable(unit) == "CACHE_AWARE_MODERN_MODULE"
    assert unit.folder == "cache_aware_lm"
    assert unit.suites_through(1) == ("packages/cache_aware_lm/tests",)


def test_without_a_route_m03_is_cache_aware_lm_and_the_advanced_one_is_named(
    practise, home: Path
) -> None:
    started = practise("start", "M03")
    assert started.code == 0, started.err
    assert (home / "cache_aware_lm_attempt.py").is_file()
    assert "`start cache_aware_modern`" in started.out
    named = practise("start", "cache_aware_modern")
    assert named.code == 0 and (home / "cache_aware_modern_attempt.py").is_file()


def test_the_advanced_branch_binds_m03_its_gate_and_mock_b(practise, home: Path, clock) -> None:
    _route(home, clock(), "advanced")
    started = practise("start", "m03")
    assert started.code == 0, started.err
    assert (home / "cache_aware_modern_attempt.py").is_file()
    assert not (home / "cache_aware_lm_attempt.py").exists()
    assert "M03 on your advanced branch" in started.out
    assert "M03 cache_aware_modern" in started.out
    store = Store(home / STORE_NAME)
    try:
        assert [a.mechanism for a in store.active()] == ["cache_aware_modern"]
        m03_gate = next(g for g in gates(store) if g.name.startswith("M03 passes"))
        assert "M03 cache_aware_modern" in m03_gate.evidence
    finally:
        store.close()
    mock_b = next(m for m in model_mocks("advanced") if m.letter == "B")
    assert mock_b.package == "cache_aware_modern"
    drawn = model_draw([], ["cache_aware_modern"], "advanced")
    assert drawn is not None and drawn.mock.package == "cache_aware_modern"
    assert "graded as M03 cache_aware_modern" in drawn.why


def test_the_simple_branch_keeps_m03_on_cache_aware_lm(practise, home: Path, clock) -> None:
    _route(home, clock(), "simple")
    started = practise("start", "M03")
    assert started.code == 0, started.err
    assert (home / "cache_aware_lm_attempt.py").is_file()
    assert "M03 on your simple branch" in started.out
    assert next(m for m in model_mocks("simple") if m.letter == "B").package == "cache_aware_lm"


REFERENCE = Path(__file__).resolve().parents[2] / "cache_aware_lm" / "src" / "cache_aware_lm"
FAITHFUL = Path(__file__).resolve().parents[3] / "integration_tests" / "faithful"


def _copied_reference() -> str:
    """`cache_aware_lm.advanced` as a learner would copy it into an attempt: its relative
    imports made absolute (an attempt is a plain file, not part of the package)."""
    text = (REFERENCE / "advanced.py").read_text(encoding="utf-8")
    return re.sub(r"^from \.([\w.]+) import", r"from cache_aware_lm.\1 import", text, flags=re.M)


def test_a_p19_pass_binds_m03_and_its_check_grades_the_advanced_target(
    practise, home: Path, clock, paste
) -> None:
    """The whole path on the fake clock: P19 passed by its deadline, the diagnostic
    finished, `start M03` begins cache_aware_modern, today's M03 names it, and the copied
    reference passes every stage of its check (graded as CACHE_AWARE_MODERN_MODULE)."""
    assert practise("start", "P19").code == 0
    clock.advance(minutes=10)
    p19 = home / "p19_attempt.py"
    p19.write_text(p19.read_text() + paste("P19"))
    assert practise("check", "P19").code == 0
    clock.advance(minutes=40)  # past P19's 45-minute deadline
    done = practise("diagnose", "--self", "kv_capacity=2", "--self", "request_path=2", "--finish")
    assert done.code == 0, done.err
    assert "M03 branch (frozen from P19 at its deadline): advanced" in done.out

    started = practise("start", "M03")
    assert started.code == 0 and "M03 on your advanced branch" in started.out
    today = practise("today", "--day", "5").out
    assert "M03 cache_aware_modern: graded, `start M03`" in today

    attempt = home / "cache_aware_modern_attempt.py"
    attempt.write_text(attempt.read_text() + _copied_reference())
    checked = practise("check", "--all")
    assert checked.code == 0, checked.out + checked.err
    assert "cache_aware_modern" in checked.out


def test_a_model_that_is_not_m02_fails_the_advanced_stage_one(practise, home: Path) -> None:
    """The simple branch's stranger (any cache-aware model) is not M02: checked as
    cache_aware_modern, stage 1 fails on M02's checkpoint (routed, the clause named)."""
    assert practise("start", "cache_aware_modern").code == 0
    attempt = home / "cache_aware_modern_attempt.py"
    simple = FAITHFUL / "good_cache_aware_lm_manual_softmax.py"
    attempt.write_text(attempt.read_text() + simple.read_text(encoding="utf-8"))
    checked = practise("check")
    assert checked.code == 1, checked.out + checked.err
    assert "cache_aware_modern stage 1/6: FAIL" in checked.out
    assert "m03_checkpoint" in checked.out and "M03.2" in checked.out
