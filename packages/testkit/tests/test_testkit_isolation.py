"""Grading survives the candidate: time limits, crashes, memory, stop list, JSON and JUnit.

Each case runs a tiny routed suite in a pytest subprocess under the grading options
(one xdist worker, a short time limit), so the grader's own process is what is tested.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gptlab_testkit.commands.grade import grading_args

pytestmark = [pytest.mark.extension, pytest.mark.owner("grading")]

# Each hostile test is followed by an honest one, which must still run and pass.
HOSTILE = {
    "hang": ("time.sleep(60)", "timed out after 3 s"),
    "exit": ("os._exit(3)", "crashed: the test process died"),
    "abort": ("os.abort()", "crashed: the test process died"),
    "segfault": ("import ctypes; ctypes.string_at(0)", "crashed: the test process died"),
    "interrupt": ("raise KeyboardInterrupt", "the code under test raised KeyboardInterrupt"),
    "sys_exit": ("sys.exit('library code gave up')", "SystemExit"),
    "memory": ("x = [bytearray(2**26) for _ in range(10**6)]", "MemoryError"),
    "plain": ("assert 1 == 2", "assert 1 == 2"),
}
CASE = """
@pytest.mark.contract
@pytest.mark.owner("chunked_metadata")
def test_{name}():
    {body}

@pytest.mark.contract
@pytest.mark.owner("loss_shift")
def test_{name}_then_honest():
    assert sum(range(4)) == 6
"""


def _run(pytester: pytest.Pytester, source: str, *extra: str) -> pytest.RunResult:
    pytester.makepyfile(test_suite=source)
    return pytester.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "--gptlab-scorecard",
        f"--gptlab-report={pytester.path / 'report.json'}",
        *grading_args(timeout=3, memory_limit=1024, workers=1),
        *extra,
    )


def _records(pytester: pytest.Pytester) -> dict[str, dict[str, object]]:
    payload = json.loads((pytester.path / "report.json").read_text())
    return {row["nodeid"].split("::")[-1]: row for row in payload["tests"]}


def test_hostile_tests_fail_routed_with_a_reason_and_the_rest_still_runs(
    pytester: pytest.Pytester,
) -> None:
    source = "import os, sys, time\nimport pytest\n" + "".join(
        CASE.format(name=name, body=body) for name, (body, _) in HOSTILE.items()
    )
    junit = pytester.path / "junit.xml"
    result = _run(pytester, source, f"--junitxml={junit}")
    assert result.ret == 1
    records = _records(pytester)
    for name, (_, reason) in HOSTILE.items():
        hostile, honest = records[f"test_{name}"], records[f"test_{name}_then_honest"]
        assert (hostile["outcome"], hostile["owner"]) == ("failed", "chunked_metadata"), name
        assert reason in str(hostile["reason"]), (name, hostile["reason"])
        assert honest["outcome"] == "passed", (name, honest["reason"])
    for row in records.values():
        assert set(row) >= {"package", "tiers", "owner", "kind", "outcome", "duration", "reason"}
        assert isinstance(row["duration"], float) and row["duration"] >= 0
    # JUnit XML from the same run; the scorecard and routing are printed from the records
    assert junit.read_text().count("<testcase ") == len(records)
    output = result.stdout.str()
    assert "gptlab scorecard" in output
    routed = f"chunked_metadata  [chunked_prefill] chunked-prefill state threading  ({len(HOSTILE)}"
    assert routed + " failed)" in output


def test_a_hanging_candidate_is_stopped_after_its_first_time_out(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    attempt = pytester.path / "attempt.py"
    attempt.write_text("def chunked_prefill(*args):\n    while True:\n        pass\n")
    monkeypatch.setenv("CHUNKED_PREFILL_MODULE", str(attempt))
    calls = "\n".join(
        f"""
@pytest.mark.contract
@pytest.mark.owner("chunked_metadata")
def test_calls_{i}():
    cp.chunked_prefill()
"""
        for i in range(4)
    )
    source = (
        "import pytest\nfrom gptlab_testkit import candidate\n"
        'cp = candidate("CHUNKED_PREFILL_MODULE")\n' + calls
    )
    result = _run(pytester, source)
    assert result.ret == 1
    reasons = sorted(str(row["reason"]) for row in _records(pytester).values())
    assert reasons[-1] == "timed out after 3 s"
    assert all(r.startswith("not run: CHUNKED_PREFILL_MODULE hung") for r in reasons[:-1])
    assert all(
        row["variables"] == ["CHUNKED_PREFILL_MODULE"] for row in _records(pytester).values()
    )


def test_grade_runs_the_candidate_from_a_scratch_directory(tmp_path: Path) -> None:
    from gptlab_testkit.running.suites import run_pytest

    suite = tmp_path / "test_cwd.py"
    suite.write_text(
        "import os, pytest\n"
        "@pytest.mark.contract\n@pytest.mark.owner('grading')\n"
        "def test_litter():\n    open('litter.txt', 'w').write('x')\n"
        "    assert os.getcwd() != " + repr(str(tmp_path)) + "\n"
    )
    run = run_pytest([str(suite)], {}, ["-p", "no:cacheprovider"], cwd=tmp_path, scratch_cwd=True)
    assert run.returncode == 0, run.output
    assert not (tmp_path / "litter.txt").exists()


PROTECTIONS = """
import os
import pytest
from gptlab_testkit import candidate
from gptlab_testkit.running import isolation

kv = candidate("KV_CACHE_MODULE")


@pytest.mark.contract
@pytest.mark.owner("fixed_capacity_storage")
def test_protections(request):
    option = request.config.option
    seen = (option.timeout, option.gptlab_memory_limit, option.gptlab_workers > 0)
    assert seen == {expected}, seen
    assert isolation.IN_POOL_WORKER is {expected}[2]
    assert (os.getcwd() == {here!r}) is not {expected}[2]
"""


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ((), (60.0, 4096, True)),  # a candidate swapped in: grade's defaults
        (("--timeout=5", "--gptlab-workers=0", "--gptlab-memory-limit=0"), (5.0, 0, False)),
    ],
)
def test_a_swapped_candidate_turns_the_grading_protections_on(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    args: tuple[str, ...],
    expected: tuple[object, ...],
) -> None:
    attempt = pytester.path / "attempt.py"
    attempt.write_text("def append_kv_cache():\n    pass\n\nclass KVCache:\n    pass\n")
    monkeypatch.setenv("KV_CACHE_MODULE", str(attempt))
    pytester.makefile(".ini", pytest="[pytest]\ngptlab = true\n")  # a gptlab suite
    pytester.makepyfile(
        test_protected=PROTECTIONS.format(expected=expected, here=str(pytester.path))
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", *args)
    assert result.ret == 0, result.stdout.str()
