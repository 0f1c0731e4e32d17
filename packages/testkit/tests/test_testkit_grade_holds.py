"""What a submission cannot do to grade itself: links are refused, a forged report or a
dead or stopped judge earns nothing, and every run ends by its deadline.

The runs here are toy suites in a temporary folder (no gptlab package graded), forked
as grade forks its runs (`suites.ForkedRun`), judged against a listed set of tests as
grade judges them (`grading.JudgedRun`).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from gptlab_testkit.commands import classroom
from gptlab_testkit.commands.grade import main as grade_main
from gptlab_testkit.commands.grading import (
    DEADLINE_CAP_S,
    JudgedRun,
    RefusedSubmissionError,
    overall_deadline,
    parse_assignments,
)
from gptlab_testkit.running.expected import Expected
from gptlab_testkit.running.results import (
    ReportNotAuthenticError,
    TestResult,
    read_report,
    write_report,
)
from gptlab_testkit.running.suites import ForkedRun, SuiteRun

pytestmark = [pytest.mark.extension, pytest.mark.owner("grading")]

REFERENCE = Path(__file__).resolve().parents[2] / "kv_cache" / "src" / "kv_cache"


def _reference_file() -> Path:
    found = sorted(REFERENCE.glob("*.py"))
    assert found, f"no reference source under {REFERENCE}"
    return found[0]


# -- links


def test_a_folder_whose_module_links_to_the_reference_is_refused(tmp_path: Path) -> None:
    (tmp_path / "kv_cache.py").symlink_to(_reference_file())
    with pytest.raises(RefusedSubmissionError, match=r"kv_cache\.py: a symbolic link"):
        parse_assignments([str(tmp_path)])


def test_a_link_to_a_folder_anywhere_in_a_submission_is_refused(tmp_path: Path) -> None:
    (tmp_path / "kv_cache.py").write_text("x = 1\n")
    (tmp_path / "helpers").mkdir()
    (tmp_path / "helpers" / "borrowed").symlink_to(REFERENCE, target_is_directory=True)
    with pytest.raises(RefusedSubmissionError, match=r"helpers/borrowed: a symbolic link"):
        parse_assignments([str(tmp_path)])


def test_a_linked_submission_folder_is_refused(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (real / "kv_cache.py").write_text("x = 1\n")
    (tmp_path / "linked").symlink_to(real, target_is_directory=True)
    with pytest.raises(RefusedSubmissionError, match="linked: a symbolic link"):
        parse_assignments([str(tmp_path / "linked")])


@pytest.mark.parametrize("form", ["pair", "assignment", "lone"])
def test_a_linked_file_or_a_linked_sibling_of_a_file_is_refused(tmp_path: Path, form: str) -> None:
    (tmp_path / "kv_cache.py").symlink_to(_reference_file())
    arguments = {
        "pair": ["kv_cache", str(tmp_path / "kv_cache.py")],
        "assignment": [f"kv_cache={tmp_path / 'kv_cache.py'}"],
        "lone": [str(tmp_path / "kv_cache.py")],
    }[form]
    with pytest.raises(RefusedSubmissionError, match=r"kv_cache\.py: a symbolic link"):
        parse_assignments(arguments)
    (tmp_path / "mine.py").write_text("x = 1\n")  # its sibling kv_cache.py would travel
    with pytest.raises(RefusedSubmissionError, match=r"kv_cache\.py: a symbolic link"):
        parse_assignments([f"kv_cache={tmp_path / 'mine.py'}"])


def test_grade_refuses_a_link_in_one_line_and_its_outputs_earn_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    submission = tmp_path / "submission"
    submission.mkdir()
    (submission / "kv_cache.py").symlink_to(_reference_file())
    results, report = tmp_path / "results.json", tmp_path / "grade.json"
    code = grade_main([str(submission), "--gradescope", str(results), "--json", str(report)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 4
    assert len(err) == 1 and "kv_cache.py: a symbolic link" in err[0], err
    payload = json.loads(results.read_text())
    assert payload["score"] == 0 and "symbolic link" in payload["output"]
    assert json.loads(report.read_text())["tests"] == []


@pytest.mark.usefixtures("away_from_the_checkout")
def test_a_class_refuses_a_submission_with_a_link_and_grades_the_rest(tmp_path: Path) -> None:
    (tmp_path / "alice").mkdir()
    (tmp_path / "alice" / "kv_cache.py").symlink_to(_reference_file())
    (tmp_path / "bob").symlink_to(REFERENCE, target_is_directory=True)
    folders = classroom.submission_folders(tmp_path)
    assert [folder.name for folder in folders] == ["alice", "bob"]
    code = grade_main(["--submissions", str(tmp_path), "--out", str(tmp_path / "_out")])
    rows = json.loads((tmp_path / "_out" / "class.json").read_text())["submissions"]
    assert code == 0
    for row in rows:
        assert row["verdict"] == "not graded" and row["tests"] == []
        assert row["note"].startswith("refused: ") and "symbolic link" in row["note"]


# -- the report's authentication


def _record(outcome: str = "failed") -> TestResult:
    return TestResult("t.py::test_a", "kv_cache", "grading", "contract", (), outcome)  # type: ignore[arg-type]


def test_a_keyed_report_is_read_only_while_its_hmac_holds(tmp_path: Path) -> None:
    report, key = tmp_path / "report.json", b"k" * 32
    write_report(report, [_record()], {}, key=key)
    assert read_report(report, key=key)[1][0].outcome == "failed"
    forged = json.loads(report.read_text())
    forged["tests"][0]["outcome"] = "passed"
    report.write_text(json.dumps(forged))
    with pytest.raises(ReportNotAuthenticError):
        read_report(report, key=key)
    write_report(report, [_record()], {}, key=key)
    with pytest.raises(ReportNotAuthenticError):
        read_report(report, key=b"another key".ljust(32))
    (tmp_path / "report.json.hmac").unlink()
    with pytest.raises(ReportNotAuthenticError):
        read_report(report, key=key)


SUITE = """
import os, signal, time
import pytest

@pytest.mark.extension
@pytest.mark.owner("grading")
def test_one():
    {body}
"""

# Runs in the judging process after the plugin wrote its report: a report it did not write.
FORGER = """
import json

def pytest_unconfigure(config):
    path = config.getoption("--gptlab-report")
    payload = json.loads(open(path).read())
    for test in payload["tests"]:
        test["outcome"], test["reason"] = "passed", ""
    open(path, "w").write(json.dumps(payload))
"""


def _suite(folder: Path, body: str, conftest: str = "") -> list[str]:
    (folder / "test_toy.py").write_text(SUITE.format(body=body))
    if conftest:
        (folder / "conftest.py").write_text(conftest)
    return [str(folder)]


def _judged(paths: list[str], limit: float) -> JudgedRun:
    listed = Expected((TestResult("test_toy.py::test_one", "toy", "grading", "contract", ()),))
    run = ForkedRun(paths, {}, ["--timeout=0"], limit=limit)
    return JudgedRun(run, listed)


KEY_UNSEEN = """
import os
from pathlib import Path

import pytest

@pytest.mark.extension
@pytest.mark.owner("grading")
def test_the_key_is_in_no_command_line_or_environment(request):
    key = request.config.getoption("--gptlab-report-key")
    assert key and len(bytes.fromhex(key)) == 32
    assert key not in os.environ.values()
    for pid in (os.getpid(), os.getppid()):
        for shown in ("cmdline", "environ"):
            assert key.encode() not in Path(f"/proc/{pid}/{shown}").read_bytes()
"""


def test_the_judging_process_gets_its_key_where_no_process_can_read_it(tmp_path: Path) -> None:
    (tmp_path / "test_key.py").write_text(KEY_UNSEEN)
    run = ForkedRun([str(tmp_path)], {}, ["--timeout=0"]).wait()
    assert not run.forfeit and [r.outcome for r in run.results] == ["passed"], run.output


def test_a_report_the_judging_process_did_not_write_earns_nothing(tmp_path: Path) -> None:
    run = _judged(_suite(tmp_path, "assert False", FORGER), limit=60).wait()
    assert run.forfeit and "failed authentication" in run.problem
    assert [(r.outcome, r.reason) for r in run.results] == [("failed", run.problem)]


@pytest.mark.parametrize(
    ("body", "said"),
    [
        ("os.kill(os.getpid(), signal.SIGKILL)", "judging process was killed by signal 9"),
        ("os.kill(os.getpid(), signal.SIGSTOP); time.sleep(60)", "judging process was stopped"),
        ("os.kill(os.getppid(), signal.SIGSTOP); time.sleep(60)", "keeper was stopped"),
    ],
)
def test_a_killed_or_stopped_judge_or_keeper_earns_nothing_at_once(
    tmp_path: Path, body: str, said: str
) -> None:
    started = time.monotonic()
    run = _judged(_suite(tmp_path, body), limit=40).wait()
    assert time.monotonic() - started < 30, "grade waited for a stopped process"
    assert run.forfeit and said in run.problem and run.problem.endswith("nothing earned")
    assert [r.outcome for r in run.results] == ["failed"] and run.returncode == 1


def test_a_class_row_of_a_forfeited_run_fails_every_test_and_says_why() -> None:
    why = "the judging process was killed by signal 9 (SIGKILL): nothing earned"
    failed = TestResult("t.py::test_a", "p19", "grading", "contract", (), "failed", reason=why)
    run = SuiteRun(1, [failed], "", why, forfeit=True)
    row = classroom.submission_from("mallory", run, {}, None)
    assert (row.status, row.verdict, row.note) == ("graded", "FAIL", why)
    assert "nothing earned" in classroom.markdown_table([row])
    assert row.counts("p19")["passed"] == 0


def test_a_run_past_its_deadline_is_ended_and_what_it_did_not_report_fails(
    tmp_path: Path,
) -> None:
    pending = _judged(_suite(tmp_path, "time.sleep(120)"), limit=600)
    pending.limit_from_now(4)  # as grade does once the tests are listed
    started = time.monotonic()
    run = pending.wait()
    assert time.monotonic() - started < 25
    assert run.forfeit and run.problem.startswith("ran past its time limit")
    assert [r.outcome for r in run.results] == ["failed"]


def test_the_deadline_grows_with_the_listed_tests_and_is_capped() -> None:
    assert overall_deadline(1, 5) == 5 + 60 + 1 * (5 + 10)
    assert overall_deadline(3, 5) - overall_deadline(2, 5) == 15
    assert overall_deadline(10_000, 60) == DEADLINE_CAP_S
