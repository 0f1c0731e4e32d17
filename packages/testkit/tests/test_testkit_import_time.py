"""Mutants of code that runs at import are judged in a fresh interpreter (`import_time`)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gptlab_testkit.audit import import_time

pytestmark = [pytest.mark.extension, pytest.mark.owner("grading")]

MODULE = """
import os

def build():
    return 2 if os.environ.get("MUTANT_UNDER_TEST") == "pkg.mod.x_build__mutmut_1" else 1

def later():
    return 3

CONSTANT = build()
"""
TESTS = """
from pkg.mod import CONSTANT, later

def test_the_constant():
    assert CONSTANT == 1

def test_later():
    assert later() == 3
"""


def _project(root: Path) -> Path:
    for src in (root / "src", root / "mutants" / "src"):
        (src / "pkg").mkdir(parents=True)
        (src / "pkg" / "__init__.py").write_text("")
        (src / "pkg" / "mod.py").write_text(MODULE)
    for tests in (root / "tests", root / "mutants" / "tests"):
        tests.mkdir()
        (tests / "test_mod.py").write_text(TESTS)
    return root


# plain pytest, no plugins: the probe's own cost, not the testkit's import
ENV = {k: v for k, v in os.environ.items() if k != "MUTANT_UNDER_TEST"}
ENV["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
ARGS = ["-p", "no:cacheprovider"]


def test_the_functions_run_while_collecting_are_found_and_no_others(tmp_path: Path) -> None:
    work = _project(tmp_path)
    found = import_time.run_at_import(work, "tests", ENV, ARGS)
    assert ("pkg.mod", "build") in found
    assert ("pkg.mod", "later") not in found  # called by a test, not at import


def test_a_mutant_switched_on_from_the_first_import_is_judged_there(tmp_path: Path) -> None:
    work = _project(tmp_path)
    assert import_time.judge_afresh(work, "tests", ENV, ARGS, "pkg.mod.x_build__mutmut_1")
    assert not import_time.judge_afresh(work, "tests", ENV, ARGS, "pkg.mod.x_build__mutmut_2")


def test_only_survivors_that_run_at_import_are_judged_again() -> None:
    asked: list[str] = []

    def judge(name: str) -> bool:
        asked.append(name)
        return name.endswith("_1")

    survivors = [
        ("m.x_a__mutmut_1", "m", "a"),
        ("m.x_a__mutmut_2", "m", "a"),
        ("m.x_b__mutmut_1", "m", "b"),
    ]
    killed = import_time.rejudge(survivors, {("m", "a")}, judge)
    assert killed == {"m.x_a__mutmut_1"}
    assert asked == ["m.x_a__mutmut_1", "m.x_a__mutmut_2"]
