"""The scoring policy: what a test's result earns, one function for every output.

Applied to the judged results (`expected.verdicts`, so grade's verdict, `--json`,
Gradescope and the class table) and to the plugin's own records (its scorecard and report,
so practice and in-process runs), it rewrites two kinds of result before anything counts:

- **Refusing earns nothing.** A rejection test (`TestResult.rejection`: a `rejection` mark,
  or every clause it names of kind rejection in its README) proves that a bad call
  changed nothing, which a function that raises for every call also proves. A passed
  contract rejection test is *held*: counted as not earned (outcome "failed", `held`
  set, a one-line reason) unless every valid-input contract test of its test file passed;
  where its file has no valid-input contract test, those of its whole package (a drill's
  suite) decide. A test the grader itself skipped (the same for every candidate) decides
  nothing either way. A held test is no failure of the candidate's: never a catch
  (`known_bad`), never a broken clause.
- **Advisory** (judged runs): a contract test whose outcome rested on a fact the worker
  reports about itself (`advisory`: what the test consulted, flagged at run time by the
  testkit's helpers; see `advisory`) is taken out of the score: outcome "skipped" with its
  own result in the reason, printed under ADVISORY, never in a score, a pass verdict,
  Gradescope's points or the class table. In-process runs consult no such fact.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import replace

from gptlab_testkit.running.results import TestResult

HELD = "held: a rejection earns only beside the work it guards"
ADVISORY = "advisory (worker-reported, not scored)"
BEYOND = "beyond the contract (not scored)"


def is_advisory(result: TestResult) -> bool:
    """Taken out of the score: its outcome rested on a worker-reported fact."""
    return bool(result.advisory) and result.outcome == "skipped"


def scored(results: Sequence[TestResult]) -> list[TestResult]:
    """Every result as the score sees it: advisory ones set apart, then holds applied.

    Idempotent (a result already set apart or held stays as it is), so a report the
    plugin wrote can be judged again by grade."""
    apart = [_set_apart(result) for result in results]
    return _hold_unguarded_rejections(apart)


def _set_apart(result: TestResult) -> TestResult:
    if not result.advisory or result.outcome == "skipped" or result.kind != "contract":
        return result
    said = f": {result.reason}" if result.reason else ""
    reason = f"{ADVISORY}: {result.outcome} (rested on {result.advisory}){said}"
    return replace(result, outcome="skipped", reason=reason[:400], held=False)


def _file(result: TestResult) -> str:
    return result.nodeid.split("::", 1)[0]


def _hold_unguarded_rejections(results: list[TestResult]) -> list[TestResult]:
    failed_in_file: dict[str, int] = defaultdict(int)
    failed_in_package: dict[str, int] = defaultdict(int)
    valid_files: set[str] = set()
    for result in results:
        if result.kind != "contract" or result.rejection or result.outcome == "skipped":
            continue
        valid_files.add(_file(result))
        if result.outcome == "failed":
            failed_in_file[_file(result)] += 1
            failed_in_package[result.package] += 1
    out = []
    for result in results:
        if result.kind == "contract" and result.rejection and result.outcome == "passed":
            where = _file(result)
            if where in valid_files:
                failed, beside = failed_in_file[where], "of this file"
            else:
                failed, beside = failed_in_package[result.package], f"of {result.package}"
            if failed:
                tests = "test" if failed == 1 else "tests"
                why = f"{HELD}; {failed} valid-input {tests} {beside} failed"
                result = replace(result, outcome="failed", held=True, reason=why, error="")
        out.append(result)
    return out


def advisory_outcome(result: TestResult) -> str:
    """What an advisory test did before it was set apart: "passed" or "failed"."""
    rest = result.reason.removeprefix(f"{ADVISORY}: ")
    return rest.split(" ", 1)[0] if is_advisory(result) and rest != result.reason else ""


__all__ = ["ADVISORY", "BEYOND", "HELD", "advisory_outcome", "is_advisory", "scored"]
