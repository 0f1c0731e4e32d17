"""Named re-solves: a `[MECH.resolves.NAME]` table of stages.toml as a one-stage unit.

modern_lm's 45-minute layer reconstruction is started as its own attempt
(`start modern_lm:layer_reconstruction`), graded through MODERN_LM_MODULE by
modern_lm's suite narrowed to the table's selection, and kept in history, status and the
schedule under its own key. The expected minutes, build and stop are read from the
table itself, never restated here. A check is a real grader run (a few seconds).
"""

from __future__ import annotations

import shutil
import sqlite3
import tomllib
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from gptlab_practice.grader import attempt_filename, graded_names, unit_variable
from gptlab_practice.stages import mechanisms, parse_stages, resolves, units

pytestmark = [pytest.mark.extension, pytest.mark.owner("practice")]

ROOT = Path(__file__).resolve().parents[3]
KNOWN_BAD = ROOT / "integration_tests" / "known_bad"
FAITHFUL = ROOT / "integration_tests" / "faithful"
KEY = "modern_lm:layer_reconstruction"
FILE = "modern_lm_layer_reconstruction_attempt.py"
# The reference re-exported under the graded names (what a faithful learner's file holds).
REFERENCE = (
    "\nfrom modern_lm import *  # noqa: F403\nfrom modern_lm import ModernLM, ModernLMConfig\n"
)
Practise = Any  # the conftest's runner: practise(*argv) -> Run(code, out, err)
FakeClock = Any


def table() -> dict[str, Any]:
    """The raw `[modern_lm.resolves.layer_reconstruction]` table."""
    text = resources.files("gptlab_practice").joinpath("stages.toml").read_text(encoding="utf-8")
    found: dict[str, Any] = tomllib.loads(text)["modern_lm"]["resolves"]["layer_reconstruction"]
    return found


def rows(home: Path, sql: str) -> list[tuple[object, ...]]:
    with sqlite3.connect(home / "practice.sqlite3") as db:
        return list(db.execute(sql))


def test_the_resolve_is_a_one_stage_unit_over_its_mechanisms_suite() -> None:
    raw, unit = table(), resolves()[KEY]
    stage = unit.stage(1)
    assert len(unit.stages) == 1
    assert (stage.minutes, stage.build, stage.stop) == (raw["minutes"], raw["build"], raw["stop"])
    assert [entry.text for entry in stage.entries] == raw["select"]
    assert {entry.folder(unit.folder) for entry in stage.entries} == {"modern_lm"}
    assert unit.resolve_of == "modern_lm" and unit.drill is None
    assert unit.suites_through(1) == ("packages/modern_lm/tests",)
    assert unit_variable(unit) == "MODERN_LM_MODULE"
    assert graded_names(unit) == graded_names("modern_lm")
    assert attempt_filename(unit) == FILE
    assert KEY not in mechanisms() and mechanisms()["modern_lm"].resolves == (unit,)
    order = list(units())
    assert order.index(KEY) == order.index("modern_lm") + 1  # listed beside its mechanism


def test_a_malformed_resolves_table_is_rejected() -> None:
    good = (
        '[m]\nreadme_section = "C"\nsource = "s"\n'
        '[[m.stages]]\nminutes = 5\nbuild = "b"\nstop = "s"\nselect = ["owner:x"]\n'
    )
    row = 'minutes = 5\nbuild = "b"\nstop = "s"\nselect = ["owner:x"]\n'
    assert list(resolves()) and parse_stages(good)["m"].resolves == ()
    named = parse_stages(good + "[m.resolves.again]\n" + row)["m"].resolves
    assert [r.package for r in named] == ["m:again"]
    with pytest.raises(ValueError, match="not an identifier"):
        parse_stages(good + '[m.resolves."two words"]\n' + row)
    with pytest.raises(ValueError, match="resolves must be a table"):
        parse_stages(good.replace('source = "s"\n', 'source = "s"\nresolves = 3\n'))


def test_start_status_and_the_mechanism_name_the_resolve(practise: Practise, home: Path) -> None:
    listed = practise("start")
    assert listed.code == 2 and not (home / FILE).exists()
    line = next(line for line in listed.out.splitlines() if KEY in line)
    assert f"{table()['minutes']}m" in line
    assert KEY in practise("status").out

    assert practise("start", "modern_lm").code == 0
    shutil.copyfile(FAITHFUL / "good_modern_lm_fused_qkv.py", home / "modern_lm_attempt.py")
    done = practise("check", "--all")
    assert done.code == 0, done.out
    assert "modern_lm: every stage passed" in done.out
    assert f"`start {KEY}`" in done.out

    unknown = practise("start", "modern_lm:no_such_resolve")
    assert unknown.code == 2 and KEY in unknown.err


def test_the_resolve_fails_routed_then_passes_and_is_recorded(
    practise: Practise, home: Path, clock: FakeClock
) -> None:
    raw = table()
    started = practise("start", KEY)
    assert started.code == 0, started.err
    attempt = home / FILE
    header = attempt.read_text()
    assert header.startswith(f"# {KEY} practice attempt 1, started 2026-12-01 09:00")
    assert "ModernLMConfig, ModernLM" in header
    assert f"stage 1/1 ({raw['minutes']}m): {raw['build']}" in started.out
    assert all(line.startswith("#") or not line for line in header.splitlines())

    clock.advance(minutes=10)
    attempt.write_text(header + (KNOWN_BAD / "bad_modern_lm_rope_on_values.py").read_text())
    wrong = practise("check", "--note", "rotated every projection")
    assert wrong.code == 1, wrong.out
    assert f"{KEY} stage 1/1: FAIL" in wrong.out
    owner = rows(home, "SELECT first_wrong_owner FROM attempts")[0][0]
    assert f"owner:{owner}" in raw["select"]  # routed to an owner the table selects
    assert f"re-solves scheduled: {KEY} 2026-12-01 (same day)" in wrong.out

    clock.advance(minutes=raw["minutes"])  # past the budget: the table's minutes are the clock's
    attempt.write_text(header + REFERENCE)
    passed = practise("check")
    assert passed.code == 0, passed.out
    assert f"{KEY} stage 1/1: PASS" in passed.out
    assert f"of {raw['minutes']}m (over budget)" in passed.out
    assert f"{KEY}: passed" in passed.out

    assert rows(home, "SELECT mechanism, status, stage_count, file FROM attempts") == [
        (KEY, "done", 1, str(attempt))
    ]
    assert rows(home, "SELECT stage, outcome FROM checks ORDER BY id") == [
        (1, "failed"),
        (1, "passed"),
    ]
    assert {r[0] for r in rows(home, "SELECT item FROM reviews")} == {KEY}
    status = next(line for line in practise("status").out.splitlines() if line.startswith(KEY))
    assert "1 done" in status and "1/1" in status and f"{owner} (s1)" in status
    history = practise("history", KEY)
    assert history.code == 0
    assert f"{KEY}: 1 attempt(s) on 1 day(s)" in history.out
    assert f"first wrong decisions by owner: {owner} 1" in history.out
    assert KEY in practise("due").out
    revealed = practise("reveal", KEY)  # the reference is its mechanism's
    assert revealed.code == 0 and "packages/modern_lm/src/modern_lm\n" in revealed.out

    clock.advance(days=1)  # the seed-style file name reaches the same unit
    again = practise("start", "modern_lm_layer_reconstruction")
    assert again.code == 0 and f"{KEY} attempt 2" in again.out
