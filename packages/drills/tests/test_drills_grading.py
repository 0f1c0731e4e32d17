"""Drills are graded as the mechanisms are: a variable each, a scorecard row each, a floor.

Extension tests of the grading machinery with gptlab-drills installed (the testkit's own
session installs the testkit alone, where no drill variable exists).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gptlab_testkit.audit.known_bad import (
    DRILL_MIN_CATCHES,
    MIN_CATCHES,
    drill_coverage,
    read_faithful,
    read_known_bad,
)
from gptlab_testkit.candidates import VARIABLES, folder_assignments, import_spec
from gptlab_testkit.commands.grade import UsageError, parse_assignments, selection
from gptlab_testkit.running.reporting import drill_labels, routing_lines
from gptlab_testkit.running.results import TestResult, package_of

pytestmark = [pytest.mark.owner("grading"), pytest.mark.extension]

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("key", ["p19", "P19", "DRILL_P19_MODULE"])
def test_grade_takes_a_drill_by_id_in_any_case(tmp_path, key):
    attempt = tmp_path / "mine.py"
    attempt.write_text("def decode_attention(*a): ...\n")
    assert parse_assignments([key, str(attempt)]) == {"DRILL_P19_MODULE": str(attempt)}


def test_grade_names_the_drills_when_a_key_is_unknown():
    with pytest.raises(UsageError, match="did you mean p19"):
        parse_assignments(["p99", "x.py"])


def test_an_attempt_folder_maps_a_drill_by_its_id_or_its_name(tmp_path):
    (tmp_path / "p19.py").write_text("")
    (tmp_path / "rectangular_mask_attempt.py").write_text("")
    found = folder_assignments(tmp_path)
    assert found["DRILL_P19_MODULE"].name == "p19.py"
    assert found["DRILL_PT17_MODULE"].name == "rectangular_mask_attempt.py"


def test_a_drill_attempt_runs_only_its_own_suite_and_no_mechanism_is_listed():
    paths, not_rerun = selection(ROOT, {"DRILL_P19_MODULE": "/x/mine.py"})
    assert paths and all("/packages/drills/tests/p19/" in path for path in paths), paths
    assert not_rerun == []


def test_a_mechanism_attempt_never_runs_a_drill_suite():
    paths, not_rerun = selection(ROOT, {"KV_CACHE_MODULE": "/x/kv.py"})
    assert not any("/packages/drills/" in path for path in paths)
    assert "kv_cache" in not_rerun


def test_each_drill_gets_its_own_scorecard_row():
    test = ROOT / "packages/drills/tests/p19/test_p19_decode_attention.py"
    assert package_of(test) == "p19"
    assert package_of(ROOT / "packages/drills/tests/test_drills_catalogue.py") == "drills"
    assert package_of(ROOT / "packages/kv_cache/tests/test_kv_cache_append.py") == "kv_cache"


def test_a_failure_routes_to_its_owner_with_the_drills_to_start():
    failed = TestResult("t::x", "tinygpt", "rectangular_mask", "contract", (), "failed")
    lines = routing_lines([failed])
    assert any(
        line.strip().startswith("drills: PT17 rectangular causal mask (35m)") for line in lines
    ), lines
    assert drill_labels(["P19"]) == "P19 single-token decode attention (45m)"


def write_candidate(folder: Path, name: str, variable: str, owner: str = "") -> Path:
    path = folder / name
    owner_line = f'EXPECTED_OWNER = "{owner}"\n' if owner else ""
    path.write_text(f'"""A candidate."""\nVARIABLE = "{variable}"\n{owner_line}')
    return path


def test_a_drill_candidate_needs_fewer_catches_than_a_mechanisms(tmp_path):
    drill = read_known_bad(write_candidate(tmp_path, "bad_a.py", "DRILL_P19_MODULE", "p19"))
    mechanism = read_known_bad(write_candidate(tmp_path, "bad_b.py", "KV_CACHE_MODULE", "p19"))
    assert drill.floor(MIN_CATCHES) == DRILL_MIN_CATCHES < mechanism.floor(MIN_CATCHES)
    assert drill.suite == Path("packages/drills/tests/p19")


def test_per_drill_coverage_names_each_drill_short_of_candidates(tmp_path):
    bad = [
        read_known_bad(write_candidate(tmp_path, f"bad_{n}.py", "DRILL_P19_MODULE", "p19"))
        for n in range(2)
    ]
    good = [read_faithful(write_candidate(tmp_path, "good_x.py", "DRILL_P19_MODULE"))]
    problems = drill_coverage(bad, good)
    assert not any(problem.startswith("drill p19:") for problem in problems)
    short = drill_coverage(bad[:1], [])
    assert "drill p19: 1 known-bad (need 2), 0 faithful (need 1)" in short
    drills = [v for v in VARIABLES.values() if v.is_drill]
    assert len(short) == len(drills)


def test_a_drill_attempt_imports_its_folders_other_drill_by_plain_name(tmp_path):
    # A P11 attempt that reuses the learner's own P09 file, as the mechanisms' do.
    (tmp_path / "p09.py").write_text("def top_k_filter(logits, k):\n    return 'mine'\n")
    (tmp_path / "p11_attempt.py").write_text(
        "from p09 import top_k_filter\n\n"
        "def sample_next_token(logits, **options):\n    return top_k_filter(logits, 1)\n"
    )
    module = import_spec(str(tmp_path / "p11_attempt.py"))
    assert module.sample_next_token(None) == "mine"
