"""A submission that cannot be graded says why, in one line, everywhere a teacher looks.

The cause is read from the failed import (a judged candidate's worker reports it as its
type and text), kept by the grading run (`cannot_grade.record_cause`), and reaches grade's
last line, the class row and Gradescope's results.json, which counts 0 of the expected
tests. results.json is checked against the fields Gradescope documents. One real grade
(a drill with a syntax error) proves the whole path and that grade leaves nothing in the
folder it was run from.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from gptlab_testkit.candidates import VARIABLES
from gptlab_testkit.commands.gradescope import gradescope_payload
from gptlab_testkit.loading.cannot_grade import (
    CAUSE_FILE_VARIABLE,
    hint_for,
    import_cause,
    record_cause,
    recorded_cause,
)
from gptlab_testkit.running.results import TestResult

pytestmark = [pytest.mark.extension, pytest.mark.owner("grading")]

# Gradescope's results.json, as its autograder specification documents it
# (gradescope-autograders.readthedocs.io, "Autograder Specifications", output format):
# every field is optional, a test's score/max_score are numbers, execution_time is
# seconds, visibility one of four values, status "passed" or "failed".
TOP_LEVEL = {
    "score": (int, float),
    "execution_time": (int,),
    "output": (str,),
    "output_format": (str,),
    "test_output_format": (str,),
    "test_name_format": (str,),
    "visibility": (str,),
    "stdout_visibility": (str,),
    "extra_data": (dict,),
    "tests": (list,),
    "leaderboard": (list,),
}
PER_TEST = {
    "score": (int, float),
    "max_score": (int, float),
    "status": (str,),
    "name": (str,),
    "name_format": (str,),
    "number": (str,),
    "output": (str,),
    "output_format": (str,),
    "tags": (list,),
    "visibility": (str,),
    "extra_data": (dict,),
}
VISIBILITIES = {"hidden", "after_due_date", "after_published", "visible"}
STATUSES = {"passed", "failed"}


def assert_gradescope_results(payload: dict[str, Any]) -> None:
    """Only documented fields, each of its documented type and values."""
    for key, value in payload.items():
        assert key in TOP_LEVEL, f"results.json: {key!r} is not a documented field"
        assert isinstance(value, TOP_LEVEL[key]) and not isinstance(value, bool), (key, value)
    assert payload.get("visibility", "visible") in VISIBILITIES
    assert payload.get("stdout_visibility", "hidden") in VISIBILITIES
    for test in payload.get("tests", []):
        for key, value in test.items():
            assert key in PER_TEST, f"results.json test: {key!r} is not a documented field"
            assert isinstance(value, PER_TEST[key]) and not isinstance(value, bool), (key, value)
        assert 0 <= test["score"] <= test["max_score"]
        assert test.get("status", "passed") in STATUSES
        assert test.get("visibility", "visible") in VISIBILITIES


KV = "KV_CACHE_MODULE"


def record(nodeid: str, package: str, owner: str, outcome: str, reason: str = "") -> TestResult:
    return TestResult(
        nodeid=nodeid,
        package=package,
        owner=owner,
        kind="contract",
        tiers=(),
        outcome=outcome,  # type: ignore[arg-type]
        reason=reason,
        variables=(KV,),
    )


def modules(kv_cache: str) -> dict[str, str]:
    return {name: variable.default_module for name, variable in VARIABLES.items()} | {KV: kv_cache}


# -- the cause, worded once


@pytest.mark.parametrize(
    ("reported", "cause", "advice"),
    [
        (
            "ModuleNotFoundError: No module named 'kv_cache_helpers'",
            "missing module 'kv_cache_helpers': no kv_cache_helpers.py beside the attempt",
            "put that module beside the attempt",
        ),
        (
            "SyntaxError: invalid syntax (kv_cache.py, line 2)",
            "syntax error at kv_cache.py line 2: invalid syntax",
            "fix that line",
        ),
    ],
)
def test_a_judged_import_failure_is_worded_as_in_process(
    reported: str, cause: str, advice: str
) -> None:
    # the judge's client raises the worker's report as ImportError("Type: text")
    worded = import_cause(ImportError(reported), "")
    assert worded.startswith(cause), worded
    assert advice in hint_for(worded)


def test_the_first_cause_of_a_run_is_kept_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    where = tmp_path / "cause.txt"
    record_cause("KV=a.py: missing module 'x'\nmore")  # not asked: nothing written
    assert recorded_cause(where) == ""
    monkeypatch.setenv(CAUSE_FILE_VARIABLE, str(where))
    record_cause("KV=a.py: missing module 'x'\nmore")
    record_cause("a later, secondary failure")
    assert recorded_cause(where) == "KV=a.py: missing module 'x'"


# -- results.json


def test_results_json_of_a_submission_not_graded_counts_every_expected_test() -> None:
    why = "not graded: KV_CACHE_MODULE=kv_cache.py: module could not be imported: ..."
    kv = [f"packages/kv_cache/tests/test_a.py::test_{i}" for i in range(3)]
    listed = [record(nodeid, "kv_cache", "storage_lifecycle", "failed", why) for nodeid in kv]
    slice_test = "integration_tests/test_slice.py::test_s"
    listed.append(record(slice_test, "integration", "slice_composition", "failed", why))
    cause = "KV_CACHE_MODULE=kv_cache.py: module could not be imported: missing module 'h'"
    payload = gradescope_payload(
        listed, modules("/s/kv_cache.py"), (), cause, seconds=3.6, not_graded=True
    )
    assert_gradescope_results(payload)
    assert payload["score"] == 0 and payload["execution_time"] == 4
    assert payload["output"].splitlines()[0] == f"not graded: {cause}"
    assert "total: 0/4 contract tests passed" in payload["output"]
    rows = {test["name"]: test for test in payload["tests"]}
    assert {name: row["max_score"] for name, row in rows.items()} == {
        "integration: slice_composition": 1,
        "kv_cache: storage_lifecycle": 3,
    }
    assert all(row["score"] == 0 and row["status"] == "failed" for row in rows.values())
    # the cause once at the top, not once per test
    assert "3 tests not run" in rows["kv_cache: storage_lifecycle"]["output"]
    assert cause not in rows["kv_cache: storage_lifecycle"]["output"]


def test_results_json_rows_name_the_repair_drills_and_whose_code_they_ran() -> None:
    storage, composition = "fixed_capacity_storage", "slice_composition"
    results = [
        record("packages/kv_cache/tests/t.py::test_a", "kv_cache", storage, "failed", "E: off"),
        record("packages/kv_cache/tests/t.py::test_b", "kv_cache", storage, "passed"),
        record("packages/chunked_prefill/tests/t.py::c", "chunked_prefill", composition, "failed"),
    ]
    payload = gradescope_payload(results, modules("/s/kv_cache.py"), seconds=12.2)
    assert_gradescope_results(payload)
    assert payload["execution_time"] == 12
    rows = {test["name"]: test["output"] for test in payload["tests"]}
    own = rows["kv_cache: fixed_capacity_storage"]
    assert "repair drills: P20" in own and "run with your" not in own
    composed = rows["chunked_prefill: slice_composition"]
    assert "chunked_prefill's tests, run with your kv_cache" in composed
    assert "no drill owns this invariant" in composed  # where to repair it instead


# -- one real grade: a drill candidate with a syntax error


def test_grade_ends_on_the_cause_and_leaves_nothing_in_its_folder(tmp_path: Path) -> None:
    attempt = tmp_path / "attempt"
    attempt.mkdir()
    (attempt / "p01_try.py").write_text("import torch\n\ndef stride_report(:\n    pass\n")
    caller = tmp_path / "caller"  # where a learner runs grade from
    caller.mkdir()
    out = tmp_path / "out"
    env = {k: v for k, v in os.environ.items() if k not in VARIABLES}
    env.pop("HYPOTHESIS_STORAGE_DIRECTORY", None)
    run = subprocess.run(
        [
            *(sys.executable, "-m", "gptlab_testkit.grade", "p01", str(attempt / "p01_try.py")),
            *("--workers", "1", "--json", str(out / "g.json"), "--gradescope", str(out / "r.json")),
        ],
        cwd=caller,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=600,
    )
    assert run.returncode == 4, run.stdout
    lines = [line for line in run.stdout.splitlines() if line.strip()]
    assert "syntax error at p01_try.py line 3" in lines[-1], run.stdout[-2000:]
    assert lines[-1].startswith("grade: not graded (0 of "), lines[-1]
    assert "grade: hint: fix that line" in lines[-2]
    assert "gptlab scorecard" not in run.stdout  # no empty scorecard under the cause
    assert sorted(p.name for p in caller.iterdir()) == []  # no .hypothesis, nothing
    expected = int(lines[-1].split("(0 of ", 1)[1].split()[0])
    assert expected > 0
    payload = json.loads((out / "r.json").read_text())
    assert_gradescope_results(payload)
    assert payload["score"] == 0
    assert sum(test["max_score"] for test in payload["tests"]) == expected
    assert "syntax error at p01_try.py line 3" in payload["output"].splitlines()[0]
    report = json.loads((out / "g.json").read_text())
    assert report["not_graded"] is True and len(report["tests"]) >= expected
