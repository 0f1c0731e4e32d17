"""Selection: grade runs only the tests that can see a swapped candidate.

A test reaches an implementation only through its variable, so the record of which
variables a test file (or a conftest.py above it) names is what selection keeps.
That it never drops a catching test is proved by `nox -s known_bad`, which grades
every known-bad candidate with selection on; these tests pin the record itself.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from gptlab_testkit.candidates import (
    _LOADING_HELPERS,
    named_variables,
    select_test_files,
    static_variables_of,
)
from gptlab_testkit.commands.grade import ladder_packages, selection
from gptlab_testkit.commands.gradescope import gradescope_payload
from gptlab_testkit.running.reporting import NOT_RERUN, scorecard_lines
from gptlab_testkit.running.results import TestResult

pytestmark = [pytest.mark.extension, pytest.mark.owner("grading")]

TESTKIT = Path(__file__).resolve().parents[1] / "src" / "gptlab_testkit"


def _suite(root: Path, package: str, files: dict[str, str]) -> Path:
    folder = root / "packages" / package / "tests"
    folder.mkdir(parents=True)
    for name, text in files.items():
        (folder / name).write_text(text)
    return folder


def test_a_file_is_selected_by_the_variables_it_or_a_conftest_names(tmp_path: Path) -> None:
    kv = _suite(
        tmp_path,
        "kv_cache",
        {
            "conftest.py": 'kvc = candidate("KV_CACHE_MODULE")\n',
            "test_storage.py": "def test_x(kv):\n    pass\n",  # sees it through the conftest
        },
    )
    other = _suite(
        tmp_path,
        "prefix_cache",
        {
            "test_lookup.py": 'pc = candidate("PREFIX_CACHE_MODULE")\n',
            "test_runner.py": "def test_y():\n    model = cache_aware_modules()\n",  # at run time
            "test_alone.py": "import prefix_cache\n",  # the reference itself: never selected
        },
    )
    paths = [str(kv), str(other)]
    assert select_test_files(paths, {"KV_CACHE_MODULE"}) == [str(kv / "test_storage.py")]
    assert select_test_files(paths, {"CACHE_AWARE_LM_MODULE"}) == [str(other / "test_runner.py")]
    assert select_test_files(paths, {"PREFIX_CACHE_MODULE", "KV_CACHE_MODULE"}) == [
        str(kv / "test_storage.py"),
        str(other / "test_lookup.py"),
    ]
    assert static_variables_of(other / "test_alone.py") == frozenset()


def test_an_unreadable_file_is_assumed_to_see_every_candidate(tmp_path: Path) -> None:
    broken = tmp_path / "test_broken.py"
    broken.write_text("def test_(:\n")
    assert "SCHEDULER_MODULE" in named_variables(broken)


def test_every_testkit_helper_that_loads_a_candidate_is_known_to_selection() -> None:
    """A new helper calling candidate() for its caller must be in _LOADING_HELPERS, or a
    test that uses only that helper would be dropped by selection."""
    loaders = {"candidate", "load_candidate"}
    found = set()
    for source in TESTKIT.glob("*.py"):
        tree = ast.parse(source.read_text())
        for function in ast.walk(tree):
            if not isinstance(function, ast.FunctionDef) or function.name in loaders:
                continue
            for node in ast.walk(function):
                if (
                    isinstance(node, ast.Call)
                    and getattr(node.func, "id", getattr(node.func, "attr", None)) in loaders
                    and node.args
                    and isinstance(node.args[0], ast.Constant)
                ):
                    found.add(function.name)
    assert found <= set(_LOADING_HELPERS), found - set(_LOADING_HELPERS)
    assert found  # cache_aware_modules is one


def test_grade_selects_only_with_a_candidate_and_not_with_full(tmp_path: Path) -> None:
    _suite(tmp_path, "kv_cache", {"test_a.py": '"KV_CACHE_MODULE"\n'})
    _suite(tmp_path, "tinygpt", {"test_b.py": '"TINY_GPT_MODULE"\n'})
    (tmp_path / "integration_tests").mkdir()
    kv = {"KV_CACHE_MODULE": "/x/kv.py"}
    paths, ladder = selection(tmp_path, kv)
    assert [Path(p).name for p in paths] == ["test_a.py"]
    assert ladder == ladder_packages(selection(tmp_path, {})[0])
    assert set(ladder) == {"tinygpt", "kv_cache", "integration"}
    for full, assignments in ((True, kv), (False, {}), (False, {"KV_CACHE_MODULE": "kv_cache"})):
        assert selection(tmp_path, assignments, full) == (selection(tmp_path, {})[0], [])


def _result(package: str, owner: str, outcome: str = "passed", reason: str = "") -> TestResult:
    return TestResult(f"{package}/test_x.py::t_{owner}_{outcome}", package, owner, "contract",
                      (), outcome, 0.1, reason)  # type: ignore[arg-type]  # fmt: skip


def test_scorecard_lists_the_packages_not_rerun() -> None:
    lines = scorecard_lines(
        [_result("kv_cache", "fixed_capacity_storage")], ["tinygpt", "kv_cache"]
    )
    kv = next(line for line in lines if line.startswith("kv_cache"))
    tiny = next(line for line in lines if line.startswith("tinygpt"))
    assert kv.split()[1:] == ["1", "0", "0", "pass"]
    assert tiny.endswith(NOT_RERUN) and "-" in tiny.split()


def test_gradescope_results_have_one_test_per_owner_with_scores() -> None:
    results = [
        _result("kv_cache", "fixed_capacity_storage"),
        _result("kv_cache", "fixed_capacity_storage", "failed", "assert 6 == 5"),
        _result("kv_cache", "storage_lifecycle"),
        _result("kv_cache", "storage_lifecycle", "skipped"),
    ]
    payload = gradescope_payload(results, {"KV_CACHE_MODULE": "/x/kv.py"}, ("tinygpt",))
    json.dumps(payload)  # Gradescope reads JSON
    tests = {test["name"]: test for test in payload["tests"]}  # type: ignore[attr-defined]
    storage = tests["kv_cache: fixed_capacity_storage"]
    assert (storage["score"], storage["max_score"], storage["status"]) == (1, 2, "failed")
    assert "assert 6 == 5" in storage["output"] and "repair:" in storage["output"]
    assert storage["visibility"] == "visible"
    assert tests["kv_cache: storage_lifecycle"]["max_score"] == 1  # a skip is not graded
    assert payload["score"] == 2
    assert "reference, not re-run" in str(payload["output"])
