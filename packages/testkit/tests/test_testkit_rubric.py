"""The model-build rubric's evidence: each build owner names a dimension, and a run's
contract results are split by them without inventing a score."""

from __future__ import annotations

import pytest

from gptlab_testkit.running.owners import OWNERS
from gptlab_testkit.running.results import TestResult
from gptlab_testkit.running.rubric import (
    BUILDS,
    DIMENSIONS,
    YOUR_SCORE,
    evidence,
    evidence_lines,
    evidence_payload,
    swapped_packages,
)

pytestmark = [pytest.mark.extension, pytest.mark.owner("grading")]


def result(owner: str, outcome: str = "passed", **fields: object) -> TestResult:
    package = OWNERS[owner].package
    name = f"packages/{package}/tests/test_x.py::test_{owner}_{outcome}_{len(fields)}"
    return TestResult(nodeid=name, package=package, owner=owner, kind="contract", tiers=(),
                      outcome=outcome, **fields)  # type: ignore[arg-type]  # fmt: skip


def test_every_build_owner_names_a_dimension_and_no_other_owner_does() -> None:
    for owner in OWNERS.values():
        if owner.package in BUILDS:
            assert owner.rubric in DIMENSIONS[:-1], owner.key  # reasoning: no test sees it
        else:
            assert owner.rubric is None, owner.key


def test_a_runs_contract_results_are_split_by_dimension_with_the_failed_owners() -> None:
    results = [
        result("head_split"),
        result("mask_polarity", "failed"),
        result("rectangular_mask"),
        result("loss_shift"),
        result("registration", "skipped"),  # not run: not evidence
        result("tying", advisory="identity"),  # the worker's word: set apart, not evidence
        result("config_validation"),
    ]
    extension = TestResult("packages/tinygpt/tests/test_e.py::test_e", "tinygpt", "head_split",
                           "extension", (), "failed")  # fmt: skip

    rows = {row.dimension: row for row in evidence([*results, extension], ["tinygpt"])}

    assert list(rows) == list(DIMENSIONS) and {row.build for row in rows.values()} == {"M01"}
    tensors = rows["tensor mechanics"]
    assert (tensors.passed, tensors.run, tensors.failed_owners) == (2, 3, ("mask_polarity",))
    assert rows["module & state ownership"].run == 0
    assert rows["inference reasoning"].summary == YOUR_SCORE
    assert rows["numerical correctness"].summary == "1/1 contract tests passed"
    lines = evidence_lines(list(rows.values()))
    assert any("2/3 contract tests passed; failed: mask_polarity" in line for line in lines)
    assert evidence_payload([tensors])[0]["failed_owners"] == ["mask_polarity"]


def test_a_build_not_graded_as_a_candidate_shows_no_rubric() -> None:
    assert evidence([result("head_split")], ["modern_lm"]) == []
    assert evidence([result("head_split")], []) == []


def test_m03s_advanced_branch_shows_cache_aware_lms_rubric(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("CACHE_AWARE_LM_MODULE", "CACHE_AWARE_MODERN_MODULE", "MODERN_LM_MODULE"):
        monkeypatch.delenv(name, raising=False)
    assert "cache_aware_lm" not in swapped_packages()
    monkeypatch.setenv("CACHE_AWARE_MODERN_MODULE", "my_m03.py")
    assert swapped_packages() == ["cache_aware_lm"]
    rows = evidence([result("m03_logits", "failed")], swapped_packages())
    assert [(r.build, r.failed_owners) for r in rows if r.run] == [("M03", ("m03_logits",))]
