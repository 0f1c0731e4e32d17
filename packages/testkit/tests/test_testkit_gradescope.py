"""Gradescope in one command: the zip that `nox -s gradescope` builds, run as Gradescope runs it.

The zip is unpacked into a temporary root standing in for /autograder, its setup.sh and
run_autograder run there (setup.sh with GPTLAB_PYTHON: this interpreter already holds the
packages, so nothing is installed), and results.json is checked against the fields of
Gradescope's autograder specification
(https://gradescope-autograders.readthedocs.io/en/latest/specs/), for a faithful and a
one-bug kv_cache submission.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from gptlab_testkit.candidates import VARIABLES

pytestmark = [pytest.mark.extension, pytest.mark.owner("grading")]

REPO = Path(__file__).resolve().parents[3]
GRADESCOPE = REPO / "examples" / "gradescope"
FAITHFUL = REPO / "integration_tests" / "faithful" / "good_kv_cache_index_copy.py"
ONE_BUG = REPO / "examples" / "class" / "bad_absolute_slot" / "kv_cache.py"
POINTS = 100.0
VISIBILITY = ["integration=after_due_date", "storage_lifecycle=hidden"]

# Gradescope's documented results.json fields (top level and per test) and their values.
TOP_FIELDS = {
    "score", "execution_time", "output", "output_format", "test_output_format",
    "test_name_format", "visibility", "stdout_visibility", "extra_data", "tests", "leaderboard",
}  # fmt: skip
TEST_FIELDS = {
    "score", "max_score", "status", "name", "name_format", "number", "output",
    "output_format", "tags", "visibility", "extra_data",
}  # fmt: skip
VISIBILITIES = {"hidden", "after_due_date", "after_published", "visible"}


def _build_zip_module() -> ModuleType:
    import importlib.util

    spec = importlib.util.spec_from_file_location("build_zip", GRADESCOPE / "build_zip.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def autograder_zip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("zip") / "autograder.zip"
    _build_zip_module().build(out, POINTS, VISIBILITY)
    return out


def _environment(root: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in VARIABLES}  # the caller's swaps
    env.update(
        AUTOGRADER_ROOT=str(root),
        GPTLAB_PYTHON=sys.executable,
        GPTLAB_GRADE_ARGS="--workers 1",
        OMP_NUM_THREADS="1",
    )
    return env


@pytest.fixture(scope="module")
def image(autograder_zip: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Gradescope's image build, once: the zip unpacked in ROOT/source, setup.sh run there."""
    root = tmp_path_factory.mktemp("image")
    with zipfile.ZipFile(autograder_zip) as archive:
        archive.extractall(root / "source")
    setup = subprocess.run(
        ["bash", str(root / "source" / "setup.sh")],
        cwd=root,
        env=_environment(root),
        capture_output=True,
        text=True,
    )
    assert setup.returncode == 0, setup.stderr
    return root / "source"


def grade_on_gradescope(image: Path, root: Path, submission: Path) -> dict[str, Any]:
    """One submission in a fresh container: run_autograder copied to ROOT, the files in."""
    root.mkdir()
    (root / "source").symlink_to(image)
    shutil.copy(image / "run_autograder", root / "run_autograder")
    (root / "submission").mkdir()
    shutil.copy(submission, root / "submission" / "kv_cache.py")
    run = subprocess.run(
        ["bash", str(root / "run_autograder")],
        cwd=root,
        env=_environment(root),
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    assert "Warning" not in run.stdout + run.stderr, run.stdout + run.stderr  # none at the door
    payload: dict[str, Any] = json.loads((root / "results" / "results.json").read_text())
    return payload


def assert_gradescope_fields(payload: dict[str, Any]) -> None:
    assert set(payload) <= TOP_FIELDS, set(payload) - TOP_FIELDS
    assert isinstance(payload["score"], int | float)
    assert isinstance(payload["output"], str)
    assert {payload.get("visibility", "visible"), payload.get("stdout_visibility", "hidden")} <= (
        VISIBILITIES
    )
    assert payload["tests"], "one Gradescope test per owner"
    for test in payload["tests"]:
        assert set(test) <= TEST_FIELDS, set(test) - TEST_FIELDS
        assert isinstance(test["name"], str) and isinstance(test["output"], str)
        assert isinstance(test["score"], int | float) and isinstance(test["max_score"], int | float)
        assert 0 <= test["score"] <= test["max_score"]
        assert test["status"] in {"passed", "failed"}
        assert test["visibility"] in VISIBILITIES


def test_the_zip_has_gradescopes_entry_files_executable_at_its_root(autograder_zip: Path) -> None:
    with zipfile.ZipFile(autograder_zip) as archive:
        modes = {info.filename: info.external_attr >> 16 for info in archive.infolist()}
        options = archive.read("gradescope_options").decode().splitlines()
    for name in ("setup.sh", "run_autograder"):
        assert modes[name] & 0o111, f"{name} is not executable in the zip"
    assert "packages/kv_cache/tests/conftest.py" in modes  # the suites travel with it
    assert options == [
        "--gradescope-points=100",
        *(f"--gradescope-visibility={item}" for item in VISIBILITY),
    ]


@pytest.mark.parametrize(
    ("submission", "faithful"), [(FAITHFUL, True), (ONE_BUG, False)], ids=["faithful", "one_bug"]
)
def test_a_submission_graded_in_gradescopes_layout_gives_valid_results(
    image: Path, tmp_path: Path, submission: Path, faithful: bool
) -> None:
    payload = grade_on_gradescope(image, tmp_path / "autograder", submission)
    assert_gradescope_fields(payload)
    tests = payload["tests"]
    assert sum(test["max_score"] for test in tests) == pytest.approx(POINTS)
    assert payload["score"] == pytest.approx(sum(test["score"] for test in tests))
    total = re.search(
        r"total: (\d+)/(\d+) contract tests passed, ([\d.]+)/100 points", payload["output"]
    )
    assert total, payload["output"]
    assert float(total[3]) == pytest.approx(payload["score"], abs=0.005)
    assert payload["score"] == pytest.approx(POINTS * int(total[1]) / int(total[2]), abs=1e-3)
    for test in tests:
        package, owner = test["name"].split(": ")
        expected = {"integration": "after_due_date"}.get(package, "visible")
        expected = "hidden" if owner == "storage_lifecycle" else expected
        assert test["visibility"] == expected, test["name"]
    if faithful:
        assert payload["score"] == pytest.approx(POINTS)
        assert all(test["status"] == "passed" for test in tests)
    else:
        assert 0 < payload["score"] < POINTS
        failed = [test for test in tests if test["status"] == "failed"]
        assert any(test["name"] == "kv_cache: fixed_capacity_storage" for test in failed)
        assert all("repair: " in test["output"] for test in failed)


def test_grades_entry_point_runs_without_a_runtime_warning(tmp_path: Path) -> None:
    """`python -m gptlab_testkit.grade`: runpy finds nothing imported ahead of the module."""
    run = subprocess.run(
        [sys.executable, "-W", "error::RuntimeWarning", "-m", "gptlab_testkit.grade", "--help"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    assert "Warning" not in run.stderr, run.stderr
