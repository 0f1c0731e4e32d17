"""Grading a class: shard slicing, the class table, merging shards, bad input, one real run.

Most tests replace the per-submission grader with synthetic records (no
grading run); the last one grades a small submissions folder for real against a
toy suite written to a temporary repository, so it needs no gptlab package.
"""

from __future__ import annotations

import csv
import io
import json
import re
import textwrap
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from gptlab_testkit.commands import classroom
from gptlab_testkit.commands.classroom import Submission, parse_shard, read_shards, shard_of
from gptlab_testkit.commands.grade import main as grade_main
from gptlab_testkit.running.results import TestResult
from gptlab_testkit.running.suites import ForkedRun, SuiteRun

pytestmark = [pytest.mark.extension, pytest.mark.owner("grading")]

KV = "KV_CACHE_MODULE"


def record(nodeid: str, package: str, owner: str, outcome: str = "passed") -> TestResult:
    return TestResult(
        nodeid=nodeid,
        package=package,
        owner=owner,
        kind="contract",
        tiers=(),
        outcome=outcome,  # type: ignore[arg-type]
        duration=0.01,
        reason="AssertionError: off by one" if outcome == "failed" else "",
        variables=(KV,),
    )


def graded(name: str, failed_owners: Sequence[str] = (), candidate: str = "") -> Submission:
    """kv_cache: three passing tests plus one failing per owner; tinygpt: two passing."""
    tests = [record(f"packages/kv_cache/tests/test_a.py::test_{i}", "kv_cache", "x") for i in "abc"]
    tests += [
        record(f"packages/kv_cache/tests/test_b.py::test_{i}", "kv_cache", owner, "failed")
        for i, owner in enumerate(failed_owners)
    ]
    tests += [record(f"packages/tinygpt/tests/test_t.py::test_{i}", "tinygpt", "x") for i in "ab"]
    modules = {KV: candidate or "kv_cache", "TINY_GPT_MODULE": "tinygpt"}
    return Submission(name, "graded", 1 if failed_owners else 0, modules, tests, seconds=2.5)


# -- shards


@pytest.mark.parametrize("count", [1, 2, 3, 7, 9])
def test_shards_hold_every_submission_exactly_once(count: int) -> None:
    names = [Path(f"s{i:02d}") for i in range(7)]
    shards = [shard_of(names, index, count) for index in range(1, count + 1)]
    together = [name for shard in shards for name in shard]
    assert sorted(together) == names
    assert len(together) == len(set(together))


def test_shard_is_an_interleaved_slice_of_the_sorted_names() -> None:
    names = [Path(name) for name in "abcdefg"]
    assert shard_of(names, 2, 3) == [Path("b"), Path("e")]
    assert parse_shard("2/3") == (2, 3)


@pytest.mark.parametrize("spec", ["0/2", "3/2", "1/0", "a/2", "2", "1/2/3", "-1/2", ""])
def test_bad_shard_spec_is_refused_naming_the_option(spec: str) -> None:
    with pytest.raises(ValueError, match="--shard must be I/N"):
        parse_shard(spec)


# -- the table


def test_table_rows_count_per_package_and_name_the_owners_hit() -> None:
    rows = [
        graded("alice"),
        graded("bob", ["storage_lifecycle", "storage_lifecycle", "fixed_capacity_storage"], "b.py"),
        classroom.not_graded(Path("carol")),
    ]
    markdown = classroom.markdown_table(rows).splitlines()
    header = next(line for line in markdown if line.startswith("| submission"))
    assert header.split(" | ")[1:7] == [
        "verdict", "points", "seconds", "candidates", "tinygpt", "kv_cache"  # the slice's order
    ]  # fmt: skip
    bob = next(line for line in markdown if line.startswith("| bob "))
    cells = [cell.strip() for cell in bob.strip("|").split("|")]
    # points: contract tests passed of those graded (2 tinygpt + 3 kv_cache of 8)
    assert cells[:7] == ["bob", "FAIL", "5/8", "2", "kv_cache", "2/0", "**3/3**"]
    assert cells[7] == "fixed_capacity_storage (1), storage_lifecycle (2)"
    carol = next(line for line in markdown if line.startswith("| carol "))
    assert "not graded" in carol and "no module named like the seed's files" in carol
    assert "3 submissions: 1 FAIL, 1 not graded, 1 pass." in markdown

    table = list(csv.DictReader(io.StringIO(classroom.csv_table(rows))))
    assert [row["submission"] for row in table] == ["alice", "bob", "carol"]
    assert table[1]["kv_cache passed"] == "3" and table[1]["kv_cache failed"] == "3"
    assert table[1]["owners hit"] == "fixed_capacity_storage:1 storage_lifecycle:2"
    assert table[1]["candidates"] == "kv_cache" and table[0]["candidates"] == ""
    assert (table[1]["points"], table[1]["max points"], table[1]["seconds"]) == ("5", "8", "2.5")
    # Nothing ran for carol: empty cells, never 0/0 (which would read "nothing failed").
    assert table[2]["verdict"] == "not graded" and table[2]["kv_cache passed"] == ""
    assert table[2]["points"] == table[2]["seconds"] == ""


def test_markdown_cells_escape_the_column_separator() -> None:
    row = classroom.not_graded(Path("dave"))
    row.note = "a | b"
    assert "a \\| b" in classroom.markdown_table([graded("alice"), row])


# -- a whole run with a synthetic grader, sharded and merged


FAILURES = {"ann": [], "ben": ["storage_lifecycle"], "cat": [], "dan": ["fixed_capacity_storage"]}


def fake_grade_submission(
    folder: Path, grade_args: Sequence[str], log: Path, limit: float | None = None
) -> Submission:
    log.write_text(f"graded {folder.name} with {list(grade_args)}\n")
    return graded(folder.name, FAILURES[folder.name], str(folder / "kv_cache.py"))


@pytest.fixture
def submissions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, away_from_the_checkout: Path
) -> Path:
    """Four folders with a kv_cache.py and one with none, graded by the fake grader."""
    monkeypatch.setattr(classroom, "grade_submission", fake_grade_submission)
    root = tmp_path / "class"
    for name in FAILURES:
        (root / name).mkdir(parents=True)
        (root / name / "kv_cache.py").write_text("# an attempt\n")
    (root / "eve").mkdir()
    (root / "eve" / "notes.txt").write_text("no python here\n")
    (root / "stray_file.py").write_text("# not a submission: submissions are folders\n")
    return root


def run(*argv: str) -> int:
    return grade_main(list(argv))


def outputs(folder: Path) -> dict[str, str]:
    return {name: (folder / name).read_text() for name in ("class.md", "class.csv", "class.json")}


def test_class_run_writes_one_row_per_submission(submissions: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert run("--submissions", str(submissions), "--out", str(out), "--", "-k", "x") == 0
    payload = json.loads((out / "class.json").read_text())
    rows = {row["name"]: row for row in payload["submissions"]}
    assert list(rows) == ["ann", "ben", "cat", "dan", "eve"]
    assert rows["ben"]["verdict"] == "FAIL" and rows["cat"]["verdict"] == "pass"
    assert rows["eve"]["status"] == "not graded" and rows["eve"]["tests"] == []
    assert payload["settings"] == {"grade_args": ["--", "-k", "x"]}
    assert (out / "logs" / "dan.log").read_text() == "graded dan with ['--', '-k', 'x']\n"
    assert not (out / "logs" / "eve.log").exists()  # nothing ran for it


def test_two_shards_merge_into_the_unsharded_table(submissions: Path, tmp_path: Path) -> None:
    whole, merged = tmp_path / "whole", tmp_path / "merged"
    assert run("--submissions", str(submissions), "--out", str(whole)) == 0
    for index in (1, 2):
        shard = f"--shard={index}/2"
        assert (
            run("--submissions", str(submissions), shard, "--out", str(tmp_path / f"s{index}")) == 0
        )
    first = json.loads((tmp_path / "s1" / "class.json").read_text())
    assert [row["name"] for row in first["submissions"]] == ["ann", "cat", "eve"]
    shard_files = [str(tmp_path / f"s{index}" / "class.json") for index in (2, 1)]
    assert run("merge", str(merged), *shard_files) == 0
    assert outputs(merged) == outputs(whole)


def test_merge_refuses_a_submission_in_two_files(submissions: Path, tmp_path: Path) -> None:
    run("--submissions", str(submissions), "--shard=1/2", "--out", str(tmp_path / "1"))
    run("--submissions", str(submissions), "--out", str(tmp_path / "whole"))
    one, whole = tmp_path / "1" / "class.json", tmp_path / "whole" / "class.json"
    with pytest.raises(ValueError, match=rf"{whole}: submission 'ann' is also in {one}"):
        read_shards([one, whole])
    with pytest.raises(ValueError, match=rf"{one} is given twice"):
        read_shards([one, tmp_path / "1" / ".." / "1" / "class.json"])
    assert run("merge", str(tmp_path / "merged"), str(one), str(whole)) == 2
    assert not (tmp_path / "merged").exists()


def test_merge_refuses_a_missing_shard(submissions: Path, tmp_path: Path) -> None:
    run("--submissions", str(submissions), "--shard=1/2", "--out", str(tmp_path / "1"))
    with pytest.raises(ValueError, match=r"\['ben', 'dan'\] were sharded .* is a shard's"):
        read_shards([tmp_path / "1" / "class.json"])


def test_merge_refuses_shards_graded_with_other_settings(submissions: Path, tmp_path: Path) -> None:
    run("--submissions", str(submissions), "--shard=1/2", "--out", str(tmp_path / "1"))
    run("--submissions", str(submissions), "--shard=2/2", "--out", str(tmp_path / "2"), "--", "-x")
    with pytest.raises(ValueError, match="graded with other settings"):
        read_shards([tmp_path / "1" / "class.json", tmp_path / "2" / "class.json"])


def test_merge_refuses_a_file_that_is_not_a_class_json(tmp_path: Path) -> None:
    wrong = tmp_path / "grade.json"
    wrong.write_text(json.dumps({"modules": {}, "returncode": 0, "tests": []}))
    with pytest.raises(ValueError, match=rf"{wrong}: not a class.json"):
        read_shards([wrong])
    with pytest.raises(ValueError, match="no such file"):
        read_shards([tmp_path / "absent.json"])


def test_a_broken_grading_process_makes_the_class_run_fail(
    submissions: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def grade_or_break(
        folder: Path, grade_args: Sequence[str], log: Path, limit: float | None = None
    ) -> Submission:
        if folder.name == "cat":
            return Submission("cat", "broken", -9, note="grading process broke (exit -9): ")
        return fake_grade_submission(folder, grade_args, log)

    monkeypatch.setattr(classroom, "grade_submission", grade_or_break)
    out = tmp_path / "out"
    assert run("--submissions", str(submissions), "--out", str(out)) == 1
    row = next(line for line in (out / "class.md").read_text().splitlines() if "| cat " in line)
    assert "| broken |" in row and "exit -9" in row


SLEEPER = """
import subprocess, sys, time
from pathlib import Path
import pytest

@pytest.mark.extension
@pytest.mark.owner("grading")
def test_sleeps():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    Path({pid_file!r}).write_text(str(child.pid))
    time.sleep(120)
"""


def _gone(pid: int) -> bool:
    status = Path(f"/proc/{pid}/status")
    return not status.exists() or "\nState:\tZ" in status.read_text()


def test_submission_time_limit_stops_the_whole_process_group(tmp_path: Path) -> None:
    pid_file = tmp_path / "grandchild.pid"
    suite = tmp_path / "test_sleeper.py"
    suite.write_text(SLEEPER.format(pid_file=str(pid_file)))
    run = ForkedRun([str(suite)], {}, ["--timeout=0"], limit=8).wait()
    assert run.problem == "ran past its time limit of 8 s and was stopped"
    grandchild = int(pid_file.read_text())
    deadline = time.monotonic() + 10
    while not _gone(grandchild) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _gone(grandchild)


def test_a_submission_past_its_time_limit_is_a_broken_row() -> None:
    run = SuiteRun(
        -9, [], "bringing up nodes...\n", "ran past its time limit of 7 s and was stopped"
    )
    row = classroom.submission_from("slow", run, {}, 7.0)
    assert (row.status, row.returncode) == ("broken", None)
    assert row.note == (
        "grading ran past its time limit of 7 s and was stopped "
        "(the --submission-timeout or the run's deadline)"
    )


# How a candidate that does not import shows in the run's output (the plugin's exit).
CANDIDATE_ERROR_LOG = (
    "!!! candidate error: KV_CACHE_MODULE=a.py: module 'a' does not define 'KVCache' !!!\n"
)


@pytest.mark.parametrize(
    ("run", "status", "returncode", "note"),
    [
        (
            SuiteRun(4, [], CANDIDATE_ERROR_LOG),
            "not graded",
            4,
            "KV_CACHE_MODULE=a.py: module 'a' does not define 'KVCache'",
        ),
        (
            SuiteRun(-11, [], "collecting ...\n", "the process importing KV=a.py died (exit -11)"),
            "not graded",
            -11,
            "the process importing KV=a.py died (exit -11)",
        ),
        (
            SuiteRun(-9, [], "", "importing KV=a.py did not finish within 120 s"),
            "not graded",
            -9,
            "importing KV=a.py did not finish within 120 s",
        ),
        (
            SuiteRun(3, [], "INTERNALERROR> boom\n"),
            "broken",
            3,
            "grading process broke (exit 3): INTERNALERROR> boom",
        ),
    ],
)
def test_a_run_without_tests_says_why(
    run: SuiteRun, status: str, returncode: int, note: str
) -> None:
    row = classroom.submission_from("attempt", run, {KV: "a.py"}, None)
    assert (row.status, row.returncode, row.note) == (status, returncode, note)
    assert row.verdict == status  # never "graded": no test of it ran
    assert not row.owners_hit()


ENVIRONMENT = """
import os
import pytest

@pytest.mark.extension
@pytest.mark.owner("grading")
def test_environment():
    assert os.environ.get("KV_CACHE_MODULE") is None
    assert os.environ["GPTLAB_UNRELATED"] == "kept"
"""


def test_the_callers_module_variables_do_not_reach_a_submission(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KV, "somebody_elses_attempt.py")
    monkeypatch.setenv("GPTLAB_UNRELATED", "kept")
    suite = tmp_path / "test_env.py"
    suite.write_text(ENVIRONMENT)
    run = ForkedRun([str(suite)], {}, [], clear_variables=True).wait()
    assert run.returncode == 0, run.output


@pytest.mark.parametrize(
    ("make", "arguments", "message"),
    [
        (False, ["--submissions", "{root}/absent"], "--submissions .*absent: no such folder"),
        (True, ["--submissions", "{root}/eve"], "--submissions .*eve: no subfolders"),
        (True, ["--submissions", "{root}", "--shard", "3/2"], "--shard must be I/N"),
        (True, ["--submissions", "{root}", "--jobs", "0"], "--jobs must be >= 1"),
        (True, ["--submissions", "{root}", "--timeout", "0"], "--timeout must be > 0"),
        (True, ["--submissions", "{root}", "--submission-timeout", "-1"], "--submission-timeout"),
        (True, ["merge", "{out}"], "usage: merge OUT_DIR"),
    ],
)
def test_bad_input_is_refused_before_anything_is_written(
    make: bool,
    arguments: list[str],
    message: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    request: pytest.FixtureRequest,
) -> None:
    root = request.getfixturevalue("submissions") if make else tmp_path / "class"
    out = tmp_path / "out"
    argv = [arg.format(root=root, out=out) for arg in arguments]
    if argv[0] != "merge":
        argv += ["--out", str(out)]
    assert run(*argv) == 2
    assert re.search(message, capsys.readouterr().err)
    assert not out.exists()


# -- one real run: a toy suite, two attempts, one grading process per attempt

TOY_SUITE = """
import pytest
from gptlab_testkit import candidate

kv = candidate("KV_CACHE_MODULE")


@pytest.mark.contract
@pytest.mark.owner("fixed_capacity_storage")
def test_append_adds():
    assert kv.append_kv_cache(2, 3) == 5


@pytest.mark.contract
@pytest.mark.owner("storage_lifecycle")
def test_cache_keeps_its_capacity():
    assert kv.KVCache(4).capacity == 4
"""

UNSEEING_SUITE = """
import pytest


@pytest.mark.contract
@pytest.mark.owner("tying")
def test_would_fail_if_it_ran():
    assert False
"""

# One graded attempt: a run forked from the (warm) class process.
OFF_BY_ONE = """
def append_kv_cache(a, b):
    return a + b + 1


class KVCache:
    def __init__(self, capacity):
        self.capacity = capacity
"""


def test_a_class_is_graded_one_forked_run_per_submission(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repository = tmp_path / "repo"  # grade runs the suites of the current directory
    tests = repository / "packages" / "kv_cache" / "tests"
    tests.mkdir(parents=True)
    # What marks a checkout for grade (gptlab_testkit.loading.checkout.is_checkout).
    (repository / "packages" / "testkit").mkdir()
    (repository / "packages" / "testkit" / "pyproject.toml").write_text("")
    (tests / "test_toy.py").write_text(textwrap.dedent(TOY_SUITE))
    # A suite that cannot see the candidate: selection leaves it to the reference's verdict.
    other = repository / "packages" / "tinygpt" / "tests"
    other.mkdir(parents=True)
    (other / "test_blind.py").write_text(UNSEEING_SUITE)
    root = tmp_path / "class"
    (root / "off_by_one").mkdir(parents=True)
    (root / "off_by_one" / "kv_cache.py").write_text(OFF_BY_ONE)
    (root / "empty").mkdir()
    # A submission that does not import: not graded, its cause in one line, 0 of 2 tests.
    (root / "no_import").mkdir()
    (root / "no_import" / "kv_cache.py").write_text("from kv_cache_helpers import slot\n")
    monkeypatch.delenv("GPTLAB_ROOT", raising=False)  # this toy checkout, by its directory
    monkeypatch.chdir(repository)

    code = run("--submissions", str(root), "--workers", "1", "--timeout", "60")

    assert code == 0  # every submission graded, whatever its verdict
    out = repository / "grade-results"
    with (out / "class.csv").open() as lines:
        table = {row["submission"]: row for row in csv.DictReader(lines)}
    assert list(table) == ["empty", "no_import", "off_by_one"]
    assert table["off_by_one"]["verdict"] == "FAIL"
    assert table["off_by_one"]["owners hit"] == "fixed_capacity_storage:1"
    assert table["off_by_one"]["kv_cache passed"] == "1"
    assert table["empty"]["verdict"] == "not graded"
    broken = table["no_import"]
    assert broken["verdict"] == "not graded" and broken["owners hit"] == ""
    assert (broken["points"], broken["max points"]) == ("0", "2")  # 0 of the expected tests
    assert broken["kv_cache passed"] == "0" and broken["kv_cache failed"] == "2"
    assert broken["note"] == (
        "KV_CACHE_MODULE=kv_cache.py: module could not be imported: missing module "
        "'kv_cache_helpers': no kv_cache_helpers.py beside the attempt and nothing installed "
        "by that name"
    )
    payload = json.loads((out / "class.json").read_text())
    statuses = {row["name"]: row["status"] for row in payload["submissions"]}
    assert statuses == {"empty": "not graded", "no_import": "not graded", "off_by_one": "graded"}
    wrong = next(row for row in payload["submissions"] if row["name"] == "off_by_one")
    assert wrong["modules"][KV] == str((root / "off_by_one" / "kv_cache.py").resolve())
    reasons = [test["reason"] for test in wrong["tests"] if test["outcome"] == "failed"]
    assert reasons == ["assert 6 == 5"]
    log = (out / "logs" / "off_by_one.log").read_text()
    assert "gptlab scorecard" in log
    assert re.search(r"tinygpt +- +- +- +reference, not re-run", log), log
    assert {test["package"] for test in wrong["tests"]} == {"kv_cache"}
