"""What a learner reads after a judged grade: a failure that raised in their code names the
file, line and function there (never client.py), the test's name once, the owners of the
package they swapped first (a composed test says which candidate it ran), only the clauses
whose own tests failed, one screen before the verdict, and the scorecard once."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from gptlab_worker.serve import submission_frames

from gptlab_testkit.judge import raised_at
from gptlab_testkit.running.plugin import show_where_it_raised
from gptlab_testkit.running.reporting import broken_clauses, routing_lines
from gptlab_testkit.running.results import NOT_RUN, TestResult

pytestmark = [pytest.mark.extension, pytest.mark.owner("grading")]

ROOT = Path(__file__).resolve().parents[3]
KV = "KV_CACHE_MODULE"

RAISES = """
def outer(x):
    return inner(x)

def inner(x):
    values = [1, 2, 3]
    return values[x]
"""


def test_the_worker_sends_only_the_submissions_frames_with_their_lines() -> None:
    namespace: dict[str, object] = {}
    exec(compile(RAISES, "/scratch/submission/attempt.py", "exec"), namespace)
    with pytest.raises(IndexError) as raised:
        namespace["outer"](7)  # type: ignore[operator]
    lines = {"/scratch/submission/attempt.py": RAISES.splitlines()}
    frames = submission_frames(raised.value, lines)
    assert frames == [
        ["attempt.py", 3, "outer", "return inner(x)"],
        ["attempt.py", 7, "inner", "return values[x]"],
    ]
    assert submission_frames(raised.value, {}) == []  # this test's own frames are never sent


def test_the_judge_keeps_only_well_formed_frames_of_the_submissions_own_files() -> None:
    folder = Path("/home/learner")
    sent = [
        ["attempt.py", 7, "inner", "return   values[x]"],
        ["client.py", 9, "request", "raise"],  # not a file of the submission
        ["attempt.py", True, "f", ""],  # a bool is no line number
        ["attempt.py", 0, "f", ""],
        ["attempt.py", 3, ["f"], ""],
        "attempt.py:3",
        ["attempt.py", 3, "outer", "x" * 1000],
        ["attempt.py", 4, "\x1b[2Jwiped", "ok\rforged"],  # no terminal control reaches it
    ]
    frames = raised_at.frames_from(sent, folder, ["attempt.py"])
    assert [str(frame) for frame in frames] == [
        f"{folder / 'attempt.py'}:3 in outer: " + "x" * 200,
        f"{folder / 'attempt.py'}:4 in [2Jwiped: ok forged",
    ]
    kept = raised_at.frames_from(sent[:1], folder, ["attempt.py"])
    assert str(kept[0]) == f"{folder / 'attempt.py'}:7 in inner: return values[x]"
    assert raised_at.frames_from({"attempt.py": 3}, folder, ["attempt.py"]) == ()


def wrap(error: Exception) -> None:
    """A test's own assertion raised from the candidate's error."""
    try:
        raise error
    except IndexError as inner:
        raise AssertionError("the call failed") from inner


def test_the_location_travels_beside_the_message_never_in_it() -> None:
    error = IndexError("list index out of range")
    frames = (raised_at.Frame("/home/learner/attempt.py", 7, "inner", "return values[x]"),)
    raised_at.attach(error, frames)
    assert str(error) == "list index out of range"  # what a test's `match` reads
    with pytest.raises(AssertionError) as wrapped:
        wrap(error)
    assert raised_at.frames_of(wrapped.value) == frames  # found through the chain
    assert raised_at.frames_of(ValueError("no frames")) == ()


def test_a_candidates_raise_in_a_judged_call_carries_its_line(tmp_path: Path) -> None:
    from gptlab_testkit.judge.client import RemoteModule, Worker

    path = tmp_path / "p19_attempt.py"
    path.write_text(RAISES)
    worker = Worker("DRILL_P19_MODULE", path, timeout_s=60, memory_mib=0)
    worker.start()
    try:
        with pytest.raises(IndexError) as raised:
            RemoteModule(worker).outer(7)
    finally:
        worker.stop()
    assert "p19_attempt.py" not in str(raised.value)
    where = [str(frame) for frame in raised_at.frames_of(raised.value)]
    assert where == [f"{path}:3 in outer: return inner(x)", f"{path}:7 in inner: return values[x]"]


def report_of(tbstyle: str) -> SimpleNamespace:
    crash = SimpleNamespace(path="/x/client.py", lineno=440, message="IndexError: boom")
    return SimpleNamespace(longrepr=SimpleNamespace(reprcrash=crash), sections=[])


def test_a_failures_report_shows_where_it_raised_and_a_line_points_there() -> None:
    frames = (
        raised_at.Frame("/l/attempt.py", 3, "outer", "return inner(x)"),
        raised_at.Frame("/l/attempt.py", 7, "inner", "return values[x]"),
    )
    short = report_of("short")
    show_where_it_raised(short, frames, "short")  # type: ignore[arg-type]
    assert short.sections == [
        (
            "where it raised in your code",
            "/l/attempt.py:3 in outer: return inner(x)\n/l/attempt.py:7 in inner: return values[x]",
        )
    ]
    assert short.longrepr.reprcrash.path == "/x/client.py"  # its traceback is shown whole
    line = report_of("line")
    show_where_it_raised(line, frames, "line")  # type: ignore[arg-type]
    assert (line.longrepr.reprcrash.path, line.longrepr.reprcrash.lineno) == ("/l/attempt.py", 7)
    untouched = report_of("line")
    show_where_it_raised(untouched, (), "line")  # type: ignore[arg-type]
    assert untouched.sections == [] and not hasattr(untouched, "gptlab_where")


def failed(
    nodeid: str, owner: str, package: str, *clauses: str, reason: str = "AssertionError: x"
) -> TestResult:
    return TestResult(nodeid, package, owner, "contract", (), "failed", reason=reason,
                      variables=(KV,), clauses=clauses)  # fmt: skip


def test_the_swapped_packages_owners_come_first_and_a_composed_test_names_the_candidate(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    results = [
        failed("integration_tests/test_slice.py::test_a", "slice_composition", "integration"),
        failed("packages/kv_cache/tests/test_k.py::test_b", "fixed_capacity_storage", "kv_cache"),
    ]
    lines = routing_lines(results, swapped=[KV])
    heads = [line for line in lines if not line.startswith(" ")]
    assert heads[0].startswith("fixed_capacity_storage  [kv_cache]")
    assert heads[1].startswith("slice_composition  [integration]")
    assert heads[1].endswith("(1 failed; ran your kv_cache)")
    assert "ran your" not in heads[0]
    assert (
        "    drills: no drill owns this invariant: repair it in your kv_cache itself"
        in "\n".join(lines)
    )
    unswapped = routing_lines(results)  # a reference run: by package, no candidate named
    assert unswapped[0].startswith("slice_composition") and "ran your" not in "".join(unswapped)


def test_a_long_list_of_failures_is_cut_with_the_command_that_shows_every_one() -> None:
    results = [
        failed(
            f"packages/kv_cache/tests/test_k.py::test_{n}",
            "fixed_capacity_storage",
            "kv_cache",
            reason=f"IndexError: index {n}",
        )
        for n in range(5)
    ]
    where = {results[0].nodeid: ["/l/kv_cache.py:3 in outer: x", "/l/kv_cache.py:9 in inner: y"]}
    lines = routing_lines(results, where=where, shown=2, every_one="`grade ... -- -v`")
    tests = [line for line in lines if line.startswith("    - ")]
    assert tests == [f"    - {r.nodeid}: {r.reason}" for r in results[:2]]
    assert "        at /l/kv_cache.py:9 in inner: y" in lines  # the innermost frame only
    assert "    ... and 3 more failed" in lines
    assert lines[-1] == "every failed test, each with its reason: `grade ... -- -v`"
    assert sum(line.startswith("    - ") for line in routing_lines(results)) == 5


def test_a_clause_is_broken_only_where_its_own_tests_fail() -> None:
    def passed(*clauses: str) -> TestResult:
        return TestResult("t::ok", "p19", "p19", "contract", (), "passed", clauses=clauses)

    gqa = failed("t::gqa", "p19", "p19", "P19.6")
    mixed = failed("t::mixed", "p19", "p19", "P19.2", "P19.4", "P19.6")
    stopped = failed("t::later", "p19", "p19", "P19.1", reason=NOT_RUN)
    hung = failed("t::hung", "p19", "p19", "P19.3", reason="not run: p19 hung in an earlier test")
    everything = [gqa, mixed, stopped, hung, passed("P19.1"), passed("P19.2", "P19.4")]
    assert broken_clauses([gqa, mixed, stopped, hung], everything) == ["P19.6"]
    # every clause of a failed test vouched for elsewhere: nothing tells them apart
    assert broken_clauses([mixed], [mixed, passed("P19.2", "P19.4", "P19.6")]) == [
        "P19.2",
        "P19.4",
        "P19.6",
    ]
    assert broken_clauses([failed("t::one", "p19", "p19", "P19.4")], everything) == ["P19.4"]


PLANTED = '''"""P19 with a planted bug: an off-by-one index past the end of the cache."""

import math

import torch


def _last_slot(capacity):
    slots = torch.arange(capacity)
    return slots[capacity]  # off by one: the last slot is capacity - 1


def decode_attention(q, k_cache, v_cache, lengths):
    group = q.shape[1] // k_cache.shape[1]
    keys = k_cache.repeat_interleave(group, dim=1)
    values = v_cache.repeat_interleave(group, dim=1)
    _last_slot(k_cache.shape[2])
    scores = (q @ keys.transpose(-1, -2)) / math.sqrt(q.shape[-1])
    valid = torch.arange(k_cache.shape[2])[None, :] < lengths[:, None]
    scores = scores.masked_fill(~valid[:, None, None, :], float("-inf"))
    return torch.softmax(scores, dim=-1) @ values
'''


def test_a_judged_grade_points_into_the_learners_file_on_one_screen(tmp_path: Path) -> None:
    attempt = tmp_path / "p19_attempt.py"
    attempt.write_text(PLANTED)
    env = {k: v for k, v in os.environ.items() if not k.endswith("_MODULE")}
    done = subprocess.run(
        [sys.executable, "-m", "gptlab_testkit.grade", "p19", str(attempt)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    out = done.stdout
    print(out)
    assert done.returncode == 1, done.stderr
    line = PLANTED.splitlines().index(
        "    return slots[capacity]  # off by one: the last slot is capacity - 1"
    )
    assert f"at {attempt}:{line + 1} in _last_slot: return slots[capacity] # off by one" in out
    assert "client.py" not in out
    before_verdict = out.split("gptlab verdict")[0].splitlines()
    assert len(before_verdict) <= 60, len(before_verdict)
    assert "gptlab scorecard" not in out and out.count("gptlab verdict") == 1
    failed_names = [ln for ln in before_verdict if ln.startswith("    - ")]
    assert len(failed_names) == len(set(failed_names)) <= 3  # each test named once, the rest cut
    assert "every failed test, each with its reason: `python -m gptlab_testkit.grade p19" in out
    assert out.count("--gptlab-failures-shown=0`") == 1
    assert "deselected below: the extension tests" in out


P19_TESTS = "packages/drills/tests/p19/test_p19_decode_attention.py"


def test_a_signature_test_failing_on_values_beside_a_broken_semantic_clause_breaks_nothing() -> (
    None
):
    def p19(name: str, clause: str, reason: str) -> TestResult:
        result = failed(f"{P19_TESTS}::{name}", "p19", "p19", clause, reason=reason)
        result.error = "AssertionError"
        return result

    values = "AssertionError: positional call vs loop oracle: Tensor-likes are not close!"
    signature = p19("test_positional", "P19.1", values)
    padding = p19("test_padding", "P19.5", "AssertionError: output: Tensor-likes are not close!")
    assert broken_clauses([signature, padding], [signature, padding]) == ["P19.5"]
    assert broken_clauses([signature], [signature]) == ["P19.1"]  # nothing else explains it
    bound = p19("test_positional", "P19.1", "AssertionError: decode_attention(q, k_cache): got 4")
    assert broken_clauses([bound, padding], [bound, padding]) == ["P19.1", "P19.5"]
