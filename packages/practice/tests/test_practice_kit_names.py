"""The kit's names: the model builds answer to M01-M05 beside their package names (in any
case, as drill ids do), lists show both, and the Triton lane's kernels T01-T08 are practice
items from the kernels' catalogue, with the kernel's minutes, graded by its own suite."""

from __future__ import annotations

import importlib.util
import sqlite3
import sys
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from gptlab_practice import stages
from gptlab_practice.schedule import after_miss
from gptlab_practice.store import STORE_NAME, Store

pytestmark = [pytest.mark.extension, pytest.mark.owner("practice")]

ROOT = Path(__file__).resolve().parents[3]
KERNELS = ROOT / "packages" / "kernels"
Practise = Any
FakeClock = Any
# The kit's route: M01 the tiny GPT, M02 the modern decoder, M03 the cache-aware model,
# M04 the vLLM-shaped port, M05 the top-two MoE.
KIT_NAMES = {
    "M01": ("tinygpt", "tiny_gpt_attempt.py"),
    "M02": ("modern_lm", "modern_lm_attempt.py"),
    "M03": ("cache_aware_lm", "cache_aware_lm_attempt.py"),
    "M04": ("runtime_lm", "runtime_lm_attempt.py"),
    "M05": ("moe_lm", "moe_lm_attempt.py"),
}


def recorded(home: Path) -> list[tuple[str, str]]:
    with sqlite3.connect(home / STORE_NAME) as db:
        return [(m, Path(f).name) for m, f in db.execute("SELECT mechanism, file FROM attempts")]


@pytest.mark.parametrize("typed", [*KIT_NAMES, "m02", "m04"])
def test_a_kit_name_starts_its_model_build(typed: str, practise: Practise, home: Path) -> None:
    package, filename = KIT_NAMES[typed.upper()]
    started = practise("start", typed)
    assert started.code == 0, started.err
    assert started.out.startswith(f"{package} attempt 1: ")
    assert "stage 1/" in started.out
    assert recorded(home) == [(package, filename)]  # kept under the package's key
    assert (home / filename).read_text().startswith(f"# {package} practice attempt 1")


@pytest.mark.parametrize("package", [package for package, _ in KIT_NAMES.values()])
def test_the_package_name_still_starts_it(package: str, practise: Practise, home: Path) -> None:
    assert practise("start", package).code == 0
    assert [m for m, _ in recorded(home)] == [package]


def test_start_s_list_names_each_build_by_kit_name_and_package(practise: Practise) -> None:
    listed = practise("start").out.splitlines()
    for kit, (package, _) in KIT_NAMES.items():
        row = next((line for line in listed if line.split()[:1] == [kit]), None)
        assert row is not None and row.split()[1] == package, (kit, listed)
    assert any(line.split()[:1] == ["kv_cache"] for line in listed)  # no kit name: the key


def test_status_and_due_show_the_kit_name_beside_the_package(
    practise: Practise, home: Path, clock: FakeClock
) -> None:
    practise("start", "M02")
    home.mkdir(parents=True, exist_ok=True)
    with Store(home / STORE_NAME) as store:  # a miss on M05: its re-solves are due
        now = clock()
        attempt = store.start_attempt("moe_lm", home / "nowhere.py", now, 75, 2)
        check = store.begin_check(attempt, 1, now)
        rows = [(1, "failed", 3, 4, "moe_router", "why")]
        planned = after_miss(stages.units()["moe_lm"], now.date())
        store.finish_check(check, rows, 1.0, now, {1: 75}, None, on_miss=planned)
    status = practise("status").out.splitlines()
    assert any(line.startswith("M02 modern_lm ") and " 1 active " in line for line in status)
    assert any(line.startswith("M05 moe_lm ") for line in status)
    at = next(i for i, line in enumerate(status) if line.startswith("no attempt yet"))
    untried = " ".join(" ".join(status[at : at + 3]).split())  # a line wrapped at 120 columns
    assert (
        "M01 tinygpt, M03 cache_aware_lm, cache_aware_lm:reconstruction,"
        " M03 cache_aware_modern, kv_cache"
    ) in untried
    due = practise("due").out
    assert f"{now.date().isoformat()}  M05 moe_lm: re-solve later the same day" in due


def test_a_transfer_case_owned_by_a_kit_name_schedules_that_build_s_re_solve() -> None:
    """PT06's canonical owner is M01: its miss schedules tinygpt's re-solve the same day."""
    pt06 = stages.units()["PT06"]
    assert pt06.drill is not None and pt06.drill.owner == "M01"
    planned = after_miss(pt06, date(2026, 12, 1))
    assert (planned[0].item, planned[0].step, planned[0].due_day) == (
        "tinygpt",
        "owner re-solve",
        "2026-12-01",
    )
    assert planned[1].item.startswith("PT") and planned[1].item != "PT06"


# The Triton lane is an install of its own (it brings triton): its items are tested where
# it is installed, and without it `start T04` names the install (the last test).
needs_kernels = pytest.mark.skipif(
    importlib.util.find_spec("gptlab_kernels") is None, reason="gptlab-kernels is not installed"
)


def kernel(kernel_id: str) -> Any:
    """The kernels' own catalogue row (its minutes, title, graded names, probes), as the
    installed gptlab-kernels publishes it (a test reaches a sibling only through practice)."""
    return stages.kernels()[kernel_id]


@needs_kernels
@pytest.mark.parametrize("typed", ["T04", "t04"])
def test_start_t04_writes_the_kernel_s_blank_file_with_its_minutes(
    typed: str, practise: Practise, home: Path
) -> None:
    t04 = kernel("T04")
    started = practise("start", typed)
    assert started.code == 0, started.err
    path = home / "t04_attempt.py"
    assert started.out.startswith(f"T04 attempt 1: {path}")
    assert f"stage 1/1 ({t04.minutes}m): {t04.title}" in started.out
    assert f"graded names: {', '.join(t04.graded)}" in started.out
    text = path.read_text()
    code = [line for line in text.splitlines() if not line.startswith("#")]
    assert code == [], code  # a blank file: the header is comments only
    assert f"#    1    {t04.minutes}m  {t04.title}" in text
    assert "# Contract: packages/kernels/README.md, section T04." in text
    assert "(gptlab-practice; the kit's Triton-lane kernel T04)" in text.splitlines()[0]
    for number, probe in enumerate(t04.probes, start=1):
        assert f"# probe {number}: {probe}" in text
    assert recorded(home) == [("T04", "t04_attempt.py")]
    listed = practise("start").out
    assert f"  T04  {t04.minutes:>3}m: {t04.title}" in listed


@needs_kernels
def test_check_t04_grades_the_attempt_with_the_kernel_s_suite(
    practise: Practise, home: Path
) -> None:
    """The same grader run as a drill's: the kernel's contract suite through DRILL_T04_MODULE."""
    practise("start", "T04")
    path = home / "t04_attempt.py"
    header = path.read_text()
    path.write_text(header + (KERNELS / "known_bad" / "bad_t04_mean_over_block.py").read_text())
    failed = practise("check")
    assert failed.code == 1, failed.out + failed.err
    assert "T04 stage 1/1: FAIL" in failed.out
    assert "first failing owner: t04" in failed.out
    assert "first wrong decision recorded: t04" in failed.out
    assert "python -m gptlab_testkit.grade t04 " in failed.out  # the grader's own command
    practise("start", "T04", "--new")
    faithful = (KERNELS / "faithful" / "good_t04_two_pass_chunks.py").read_text()
    path.write_text(path.read_text() + faithful)
    passed = practise("check")
    assert passed.code == 0, passed.out + passed.err
    assert "T04 stage 1/1: PASS" in passed.out
    reveal = practise("reveal", "T04").out
    assert "packages/kernels/src/gptlab_kernels/t04.py" in reveal
    assert "packages/kernels/README.md" in reveal


def test_a_kernel_without_the_kernels_package_names_its_install(
    practise: Practise, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Practice alone installs the drills, not the Triton lane: T04 then says what to install."""
    monkeypatch.setitem(sys.modules, "gptlab_kernels", None)  # find_spec: not installed
    stages.kernels.cache_clear()
    stages.units.cache_clear()
    try:
        refused = practise("start", "T04")
        listed = practise("start").out
    finally:
        monkeypatch.undo()
        stages.kernels.cache_clear()
        stages.units.cache_clear()
    assert refused.code == 1
    assert "T04 is a Triton-lane kernel and gptlab_kernels is not installed" in refused.err
    assert 'pip install "packages/kernels[test]"' in refused.err
    assert "Triton kernels" not in listed
    assert not home.exists()  # nothing written
