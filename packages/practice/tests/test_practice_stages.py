"""stages.toml against the suites: stages only grow, and the last one is the whole contract."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from functools import cache
from pathlib import Path

import pytest

from gptlab_practice.grader import StageRun, attempt_filename, variable_of
from gptlab_practice.stages import (
    Mechanism,
    TestIdentity,
    mechanisms,
    parse_stages,
    resolves,
    units,
)
from gptlab_practice.verdicts import stage_verdicts
from gptlab_testkit import TestResult
from gptlab_testkit.candidates import static_variables_of

pytestmark = [pytest.mark.extension, pytest.mark.owner("practice")]

ROOT = Path(__file__).resolve().parents[3]
PACKAGES = (
    "tinygpt",
    "cache_aware_lm",
    "cache_aware_modern",
    "kv_cache",
    "prefix_cache",
    "chunked_prefill",
)
PACKAGES += ("speculative", "paged_kv", "scheduler", "modern_lm")
PACKAGES += ("moe_lm", "runtime_lm", "fragment_lm")


def _collect(*extra: str) -> list[str]:
    """pytest --collect-only -q over the contract suites: the collected node ids."""
    command = [sys.executable, "-m", "pytest", "-m", "contract", "--collect-only", "-q"]
    command += ["-p", "no:cacheprovider", *extra]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return [line for line in done.stdout.splitlines() if "::" in line]


@cache
def contract_tests() -> dict[str, dict[str, TestIdentity]]:
    """{package: {node id: identity}} of the contract tests, from one collection of all suites."""
    folders = tuple(dict.fromkeys(mechanisms()[name].folder for name in PACKAGES))
    suites = [f"packages/{name}/tests" for name in folders]
    with tempfile.TemporaryDirectory() as scratch:
        report = Path(scratch) / "collected.json"
        nodeids = _collect(*suites, "--gptlab-report", str(report))
        records = json.loads(report.read_text())["tests"]
    assert {r["nodeid"] for r in records} == set(nodeids)
    found: dict[str, dict[str, TestIdentity]] = {name: {} for name in folders}
    for r in records:
        identity = TestIdentity.from_nodeid(
            r["nodeid"], r["package"], r["owner"], tuple(r["tiers"])
        )
        found[r["package"]][r["nodeid"]] = identity
    return found


def selected(mechanism: Mechanism, number: int) -> set[str]:
    """Node ids of the contract tests stage `number` selects."""
    return {
        nodeid
        for package in mechanism.packages_through(number)
        for nodeid, test in contract_tests()[package].items()
        if mechanism.selects(number, test)
    }


def grades_the_attempt(package: str, nodeid: str) -> bool:
    """A test of the package's suite that can see the package's own candidate: a file that
    names only another variable (M03's advanced branch, `CACHE_AWARE_MODERN_MODULE`, in
    cache_aware_lm's folder) grades another artifact, not this practice item's attempt."""
    named = static_variables_of(ROOT / nodeid.split("::")[0])
    return not named or variable_of(package) in named


def test_every_graded_mechanism_has_stages() -> None:
    assert list(mechanisms()) == list(PACKAGES)
    assert [s.minutes for s in mechanisms()["tinygpt"].stages] == [10, 45, 20, 30, 45, 30, 15]
    assert [s.minutes for s in mechanisms()["prefix_cache"].stages] == [15, 15, 20, 10]


@pytest.mark.parametrize("name", PACKAGES)
def test_stages_only_grow_and_the_last_selects_every_contract_test(name: str) -> None:
    mechanism = mechanisms()[name]
    previous: set[str] = set()
    for stage in mechanism.stages:
        now = selected(mechanism, stage.number)
        assert previous <= now, f"{name} stage {stage.number} drops tests of an earlier stage"
        assert now, f"{name} stage {stage.number} selects nothing"
        previous = now
    own = set(contract_tests()[mechanism.folder])
    missing = {n for n in own - previous if grades_the_attempt(name, n)}
    assert not missing, f"{name}: the last stage misses {sorted(missing)[:5]}"


@pytest.mark.parametrize("name", PACKAGES)
def test_every_selection_entry_selects_a_test(name: str) -> None:
    """A misspelt owner, file or test name would select nothing and pass every check."""
    mechanism = mechanisms()[name]
    for stage in mechanism.stages:
        for entry in stage.entries:
            tests = contract_tests()[entry.folder(mechanism.folder)].values()
            assert any(entry.matches(t, mechanism.folder) for t in tests), (
                f"{name} stage {stage.number}: {entry.text!r} selects no contract test"
            )


@pytest.mark.parametrize("key", list(resolves()))
def test_every_named_re_solve_selects_tests_of_its_build(key: str) -> None:
    """A named re-solve's entries each select a contract test of its build (a misspelt
    entry would pass every check), and it grades nothing its build's stages do not."""
    unit = resolves()[key]
    build = mechanisms()[unit.suite]
    for entry in unit.stage(1).entries:
        tests = contract_tests()[entry.folder(unit.folder)].values()
        assert any(entry.matches(t, unit.folder) for t in tests), (
            f"{key}: {entry.text!r} selects no contract test"
        )
    assert selected(unit, 1) <= selected(build, len(build.stages))


@pytest.mark.parametrize(
    ("name", "number"), [("tinygpt", 2), ("prefix_cache", 4), ("cache_aware_modern", 1)]
)
def test_the_selection_plugin_collects_what_the_stage_selects(name: str, number: int) -> None:
    """The plugin (pytest items) and the check's reading of results (node ids) agree."""
    mechanism = mechanisms()[name]
    suites = [f"packages/{p}/tests" for p in mechanism.packages_through(number)]
    plugin = ["-p", "gptlab_practice.selection", f"--practice-stage={name}:{number}"]
    collected = set(_collect(*suites, *plugin))
    assert collected == selected(mechanism, number)
    assert collected < {n for p in mechanism.packages_through(number) for n in contract_tests()[p]}


def test_selection_atoms_are_checked_when_read() -> None:
    good = '[x]\nreadme_section = "M"\nsource = "s"\n'
    good += '[[x.stages]]\nminutes = 1\nbuild = "b"\nstop = "s"\n'
    assert parse_stages(good + 'select = ["tier1 !owner:a"]\n')["x"].stage(1).entries
    for bad in ("colour:red", "tier9", "owner:"):
        with pytest.raises(ValueError, match="cannot read"):
            parse_stages(good + f'select = ["{bad}"]\n')


def test_every_unit_answers_to_its_attempt_file_name() -> None:
    """stages.toml's `file_stem` (read without torch, for `start`'s fast answer) agrees with
    the grader's first file stem, which names the attempt file."""
    for unit in units().values():
        stem = attempt_filename(unit).removesuffix("_attempt.py")
        assert stem in unit.names, f"{unit.package}: {stem} not in {unit.names}"


def test_a_rejection_held_for_a_later_stage_s_failure_leaves_its_own_stage_passed() -> None:
    """`check --all` reads every stage from one run, where the grader holds a passed rejection
    test (not earned) beside a failed valid-input test of its file, even one a later stage
    selects: the earlier stage still passes, and a held test is never a failure routed to
    its owner."""
    construction = "packages/tinygpt/tests/test_tinygpt_construction.py::"
    rejection = TestResult(
        construction + "test_refuses",  # stage 1: tier0 owner:config_validation
        "tinygpt",
        "config_validation",
        "contract",
        ("tier0",),
        outcome="failed",
        rejection=True,
        held=True,
    )
    forward = TestResult(  # stage 2: tier1 owner:decoder_forward
        construction + "test_forward",
        "tinygpt",
        "decoder_forward",
        "contract",
        ("tier1",),
        "failed",
    )
    verdicts = stage_verdicts(
        mechanisms()["tinygpt"], StageRun(1, [rejection, forward], "", 0.0), 1, 3
    )
    assert [(v.stage, v.passed, v.tests_passed) for v in verdicts] == [(1, True, 1), (2, False, 0)]
    assert verdicts[1].failed == [forward] and verdicts[1].owner == "decoder_forward"
