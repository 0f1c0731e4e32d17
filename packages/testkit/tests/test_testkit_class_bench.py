"""bench/grading.py's class: every generated submission imports alone, as a student's would.

A stranger-shaped known-bad candidate (`from _strangers import stranger_with`) needs a
helper that lives beside it in integration_tests/known_bad; copied alone into a class
folder it would fail at import, and the benchmark would measure the import error
instead of the grading. Here because importing the submissions needs the runtime
packages installed; no grading runs (about a second).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

from gptlab_testkit import VARIABLES
from gptlab_testkit.loading.attempts import load_attempt_file

pytestmark = [pytest.mark.extension, pytest.mark.owner("grading")]

ROOT = Path(__file__).resolve().parents[3]
KNOWN_BAD = ROOT / "integration_tests" / "known_bad"


def bench_grading() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gptlab_bench_grading", ROOT / "bench/grading.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def stranger_shaped(grading: ModuleType) -> list[Path]:
    """One known-bad candidate per faithful stranger the known-bad ones are made from."""
    chosen: dict[str, Path] = {}
    for path in sorted(KNOWN_BAD.glob("bad_*.py")):
        edit = grading.stranger_edit(path.read_text(encoding="utf-8"))
        if edit is not None:
            chosen.setdefault(edit[0], path)
    return list(chosen.values())


def test_a_small_class_with_stranger_shaped_candidates_imports_alone(tmp_path: Path) -> None:
    grading = bench_grading()
    strangers = stranger_shaped(grading)
    assert len(strangers) >= 3  # cache_aware_lm, paged_kv and scheduler strangers
    plain = [p for p in sorted(KNOWN_BAD.glob("bad_kv_cache_*.py")) if p not in strangers][:2]
    sources = grading.class_sources([*strangers, *plain], [])
    assert len(sources) < 9  # no seed folder among them: every submission is one file
    expected = grading.make_class(tmp_path, len(sources), sources)
    assert len(expected) == len(sources)
    for (_, [(variable, candidate)], _), name in zip(sources, expected, strict=True):
        [submission] = (tmp_path / name).glob("*.py")
        text = submission.read_text(encoding="utf-8")
        assert "_strangers" not in text, name
        edit = grading.stranger_edit(candidate.read_text(encoding="utf-8"))
        if edit is not None:  # the mistake itself is in the written-out source
            assert all(new in text for _, new in edit[1]), name
        module = load_attempt_file(submission)  # alone in its folder, as graded
        missing = [n for n in VARIABLES[variable].required_names if not hasattr(module, n)]
        assert not missing, f"{name}: {missing}"


def test_a_known_bad_submission_must_fail_on_its_owner_not_on_an_import() -> None:
    why_wrong = bench_grading().why_wrong
    bad = {"verdict": "FAIL", "owner": "cache_metadata", "hostile": False}
    hostile = {**bad, "hostile": True}
    error = {
        "verdict": "FAIL",
        "note": "candidate error: X: module could not be imported",
        "tests": [],
    }

    def failed(owner: str) -> dict[str, object]:
        tests = [{"owner": owner, "outcome": "failed"}, {"owner": "other", "outcome": "passed"}]
        return {"verdict": "FAIL", "note": "", "tests": tests}

    assert why_wrong(failed("cache_metadata"), bad) == ""
    assert "not on its expected owner" in why_wrong(failed("eos_context"), bad)
    assert why_wrong(error, bad).startswith("candidate error")
    assert why_wrong(error, hostile) == ""  # a hostile one may break its own import
    assert why_wrong(failed("x"), {"verdict": "pass"}).startswith("verdict FAIL")
