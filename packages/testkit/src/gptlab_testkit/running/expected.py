"""The tests a candidate is graded on, fixed before any candidate code runs.

A run's own report says which tests ran; a candidate that skips exactly the tests it
would fail, or drops them at collection, would otherwise be scored on the rest (6/6
reads "pass"). So the grading process lists the expected tests first: it collects the
selected files in a process forked from it, with the candidates' variables set but
every candidate *replaced by its reference* (`LISTING_VARIABLE`: nothing a candidate
wrote is imported), and records each test with its owner, package and kind, and the
skips the grader itself declares (a `skip`/`skipif` mark whose condition holds before
the run: the same for every candidate). After the run `verdicts` keeps, for each
expected test, the run's outcome when it passed or failed; a test the run skipped,
deselected, never reached or never reported counts as failed; tests the run reported
but the listing did not hold are ignored. Points never rescale to the tests that ran.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from gptlab_testkit.candidates import VARIABLES
from gptlab_testkit.running.results import TestResult, records_payload, results_from
from gptlab_testkit.running.scoring import is_advisory, scored

# Set in the listing process: `load_candidate` loads each variable's reference instead.
LISTING_VARIABLE = "GPTLAB_LISTING_EXPECTED"
LISTING_LIMIT_S = 300.0

NOT_REPORTED = "not reported by the candidate's run (dropped, deselected or never reached)"


@dataclass(frozen=True)
class Expected:
    tests: tuple[TestResult, ...]  # every expected test; outcome "skipped" when declared
    problem: str = ""  # why no list could be made (then nothing is judged by it)


class _Lister:
    """pytest plugin of the listing process: the collected tests, their declared skips."""

    def __init__(self, out: Path) -> None:
        self.out = out

    def pytest_collection_finish(self, session: Any) -> None:
        from _pytest.skipping import evaluate_skip_marks

        from gptlab_testkit.running.plugin import _result_for

        tests = []
        for item in session.items:
            record = _result_for(item)
            if isinstance(record, str):
                continue  # the run itself refuses an unrouted test
            skip = evaluate_skip_marks(item)
            if skip is not None:
                record = replace(record, outcome="skipped", reason=skip.reason)
            tests.append(record)
        self.out.write_text(json.dumps(records_payload(tests)), encoding="utf-8")


def _listing_args(args: Sequence[str]) -> list[str]:
    """The run's pytest arguments minus what writes files or runs tests."""
    return [a for a in args if not a.startswith("--junitxml") and a not in ("-x", "--pdb")]


def list_expected(
    paths: Sequence[str], assignments: Mapping[str, str], args: Sequence[str]
) -> Expected:
    """Collect `paths` with `args` as the graded run would, candidates replaced by their
    references, in a process forked from this one; bounded by LISTING_LIMIT_S."""
    with tempfile.TemporaryDirectory(prefix="gptlab-expected-") as scratch:
        out = Path(scratch) / "expected.json"
        argv = [
            *[str(Path(p).resolve()) if Path(p).exists() else p for p in paths],
            "-p",
            "no:cacheprovider",
            "--collect-only",
            "-q",
            "-W",
            "ignore::pytest.PytestAssertRewriteWarning",
            *_listing_args(args),
        ]
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            _child(argv, assignments, out, Path(scratch))
        status = _wait(pid)
        if not out.exists():
            return Expected((), f"the expected tests could not be listed (status {status})")
        rows = json.loads(out.read_text(encoding="utf-8"))
        return Expected(tuple(results_from(rows)))


def _wait(pid: int) -> int:
    deadline = time.monotonic() + LISTING_LIMIT_S
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.02)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def _child(argv: list[str], assignments: Mapping[str, str], out: Path, cwd: Path) -> None:
    code = 3
    try:
        os.setpgid(0, 0)
        for name in VARIABLES:
            os.environ.pop(name, None)
        os.environ.update(assignments)
        os.environ[LISTING_VARIABLE] = "1"
        os.chdir(cwd)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        import pytest

        code = int(pytest.main(argv, plugins=[_Lister(out)]))
    except BaseException:  # nothing may unwind into the grading process's code
        code = 3
    finally:
        os._exit(code)


def verdicts(
    expected: Expected,
    reported: Sequence[TestResult],
    reference_skips: Mapping[str, str] | None = None,
) -> list[TestResult]:
    """One result per expected test: the run's pass or fail, every other outcome a failure,
    then the scoring policy (`scoring.scored`: held rejections, advisory results).

    Owner, package, kind, tiers and role (rejection) come from the listing, never from the
    run's report; a result the run's judge set apart as advisory stays apart.
    `reference_skips` (nodeid -> reason): tests the references skip too on this machine
    (a second device it lacks): such a skip is the environment's, the same for everyone.
    """
    by_id = {result.nodeid: result for result in reported}
    judged: list[TestResult] = []
    for test in expected.tests:
        if test.outcome == "skipped":  # declared by the grader before the run
            judged.append(replace(test, reason=test.reason or "skipped by the grader"))
            continue
        got = by_id.get(test.nodeid)
        if got is None:
            judged.append(replace(test, outcome="failed", reason=NOT_REPORTED))
        elif is_advisory(got):
            judged.append(
                replace(
                    test,
                    outcome="skipped",
                    duration=got.duration,
                    reason=got.reason,
                    advisory=got.advisory,
                )
            )
        elif got.outcome == "skipped" and test.nodeid in (reference_skips or {}):
            reason = (reference_skips or {})[test.nodeid]
            judged.append(replace(test, outcome="skipped", reason=f"{reason} (as the reference)"))
        elif got.outcome == "skipped":
            why = got.reason or "no reason given"
            judged.append(
                replace(
                    test,
                    outcome="failed",
                    duration=got.duration,
                    reason=f"skipped in the candidate's run ({why}): a test the grader "
                    "did not skip before the run counts as failed",
                )
            )
        else:
            # A rejection the run held is judged again here from the listing's roles.
            held = got.held and got.outcome == "failed"
            judged.append(
                replace(
                    test,
                    outcome="passed" if held else got.outcome,
                    duration=got.duration,
                    reason="" if held else got.reason,
                    error="" if held else got.error,
                    advisory=got.advisory,
                )
            )
    return scored(judged)


def skipped_by_run(expected: Expected, reported: Sequence[TestResult]) -> dict[str, str]:
    """Expected tests, not skipped by the grader, that the candidate's run skipped: reasons."""
    wanted = {test.nodeid for test in expected.tests if test.outcome != "skipped"}
    return {
        r.nodeid: r.reason
        for r in reported
        if r.outcome == "skipped" and r.nodeid in wanted and not is_advisory(r)
    }


_REFERENCE_SKIPS: dict[frozenset[str], set[tuple[str, str]]] = {}


def reference_skips(skipped: Mapping[str, str], paths: Sequence[str]) -> dict[str, str]:
    """Which candidate skips (nodeid -> reason) the references make too on this machine.

    Their test functions run once with every candidate variable cleared (a parameter id may
    name the candidate's module, so whole functions run); a candidate's skip is the
    environment's when the references skip the same function for the same reason. Cached
    per set of functions (a class meets the same).
    """
    functions = {nodeid.split("[", 1)[0] for nodeid in skipped}
    key = frozenset(functions)
    if not functions:
        return {}
    if key not in _REFERENCE_SKIPS:
        from gptlab_testkit.running.suites import ForkedRun

        targets = [t for t in (_absolute(f, paths) for f in sorted(functions)) if t]
        run = ForkedRun(targets, {}, ["-q", "--timeout=60"], clear_variables=True, limit=300)
        _REFERENCE_SKIPS[key] = {
            (r.nodeid.split("[", 1)[0], r.reason)
            for r in run.wait().results
            if r.outcome == "skipped"
        }
    seen = _REFERENCE_SKIPS[key]
    return {
        nodeid: reason
        for nodeid, reason in skipped.items()
        if (nodeid.split("[", 1)[0], reason) in seen
    }


def _absolute(nodeid: str, paths: Sequence[str]) -> str:
    """`file::test` (relative to pytest's rootdir) made absolute against the run's paths."""
    file, _, rest = nodeid.partition("::")
    for path in paths:
        for folder in (Path(path), *Path(path).parents):
            if (folder / file).exists():
                return f"{folder / file}::{rest}" if rest else str(folder / file)
    return ""


def judged_returncode(returncode: int, judged: Sequence[TestResult]) -> int:
    """pytest's status, made non-zero when a judged failure exists that the run hid."""
    failed = any(result.outcome == "failed" for result in judged)
    if failed and returncode in (0, 5):  # 5: pytest collected nothing
        return 1
    return returncode


def verdict_lines(judged: Sequence[TestResult], not_rerun: Sequence[str] = ()) -> list[str]:
    """What grade prints after a candidate's run: the scorecard it decided itself (the run's
    own printout came from the candidate's process and is not what is graded)."""
    from gptlab_testkit.running.reporting import scorecard_lines
    from gptlab_testkit.running.rubric import evidence, evidence_lines, swapped_packages

    unreported = [r for r in judged if r.outcome == "failed" and r.reason == NOT_REPORTED]
    skipped = [r for r in judged if r.outcome == "failed" and r.reason.startswith("skipped in")]
    lines = ["", "gptlab verdict (decided by grade from the tests listed before the run)"]
    lines += scorecard_lines(judged, not_rerun)
    lines += evidence_lines(evidence(judged, swapped_packages()))
    if unreported or skipped:
        lines.append(
            f"counted as failed: {len(skipped)} skipped by the run, "
            f"{len(unreported)} not reported by it"
        )
    return lines
