"""`nox -s grade`: grade the whole slice, swapping in any candidates given.

    python -m gptlab_testkit.grade                         # references
    python -m gptlab_testkit.grade kv_cache attempt.py     # one candidate
    python -m gptlab_testkit.grade kv_cache=a.py speculative=b.py -- -x
    python -m gptlab_testkit.grade path/to/attempt_folder  # seed-style folder

Prints which module is graded for every variable, then the contract suites'
scorecard (per package, per tier for tinygpt), then each failure's owner and
repair target. Exit status is pytest's (non-zero when anything failed).

With candidates swapped in, only the tests that can see one run: those whose file
(or a conftest.py above it) names a swapped variable (`candidates.variables_of`,
the record the stop list uses). Every other test gives the references' verdict
whatever the candidate; the scorecard lists its package as `reference, not re-run`.
`--full` runs every contract test anyway; with no candidate the whole ladder runs.

The candidate's code runs with your rights. This process imports torch and the
references once; the run is forked from it, imports the candidates while collecting
(bounded in time), and forks its test processes from there (`isolation.ForkPool`).
Each test runs from a scratch working directory, under a per-test time limit and a
memory limit; a test that hangs, exits its process, aborts or crashes fails and is
routed like any other, and the rest of the suite still runs.

The suites come from a gptlab checkout: `--root` (or $GPTLAB_ROOT), else the one above the
working directory, else the one this package is installed from (an editable install);
without one, grade says so in one line. A bad argument is answered before torch is imported.

Options (before any `--`):
  --root PATH           the gptlab checkout whose suites grade runs (see above)
  --timeout SECONDS     per-test time limit (default 60)
  --memory-limit MIB    address-space limit of each test process (default 4096; 0: none)
  --workers N           test processes side by side (default: CPU count, at most 4)
  --full                run every contract test, also those that cannot see a candidate
  --json PATH           every test as JSON: package, tiers, owner, kind, outcome,
                        duration, one-line reason (the scorecard is computed from it)
  --junitxml PATH       pytest's JUnit XML
  --gradescope PATH     Gradescope's autograder results.json (one test per owner)
  --gradescope-points N scale its scores so the maximum is N (the assignment's points)
  --gradescope-visibility OWNER_OR_PACKAGE=VISIBILITY   (repeatable) when students see
                        those tests: visible, hidden, after_due_date or after_published
  --deadline SECONDS    the whole run's limit once its tests are listed (default: the
                        per-test limit + 60 s for collection, plus every listed test at
                        the per-test limit + 10 s, at most 1800 s); past it the run's
                        process tree is ended and what it did not report fails

A candidate that cannot be imported is not graded: grade ends on one line naming the cause
(a hint for it just above), counts 0 of the tests it would have run in --json and
--gradescope, and exits 4. grade leaves nothing in the folder it is run from.

A submission is read without following links: a symbolic link anywhere in a folder (or a
linked file) is refused in one line before anything is graded. A run earns nothing when
its judging process (or its keeper) dies by a signal or is stopped, or when its report
fails authentication (an HMAC with a key only grade and the judging process hold).

A whole class: `--submissions DIR [--shard I/N] [--out OUT] [--jobs N]` and
`merge OUT A.json ...`
(see `python -m gptlab_testkit.commands.classroom -h`).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

from gptlab_testkit.commands.gradescope import write_gradescope
from gptlab_testkit.commands.grading import (
    IMPORT_ALLOWANCE_S,
    RefusedSubmissionError,
    UsageError,
    grade_run,
    ladder_packages,
    parse_assignments,
    parse_options,
    selection,
    swapped_variables,
)
from gptlab_testkit.judge import reaper, sandbox
from gptlab_testkit.judge.defaults import DEFAULT_MEMORY_MIB, DEFAULT_TIMEOUT_S, default_workers
from gptlab_testkit.loading.cannot_grade import hint_for
from gptlab_testkit.running.expected import verdict_lines
from gptlab_testkit.running.reporting import graded_modules, module_lines
from gptlab_testkit.running.results import write_report
from gptlab_testkit.running.rubric import evidence, evidence_payload, swapped_packages
from gptlab_testkit.running.suites import SuiteRun, grading_args, warm_up

# Re-exported: callers and tests name them from here (grading.py holds them).
__all__ = [
    "DEFAULT_MEMORY_MIB",
    "DEFAULT_TIMEOUT_S",
    "IMPORT_ALLOWANCE_S",
    "UsageError",
    "default_workers",
    "grade_run",
    "grading_args",
    "ladder_packages",
    "parse_assignments",
    "selection",
    "swapped_variables",
]


USAGE = __doc__ or ""


# Hypothesis keeps a cache of the constants it reads from modules in `.hypothesis/` under
# the working directory unless told otherwise; grade is run from anywhere, so its own
# (and its runs') cache lives in a folder of its own, removed when grade ends.
HYPOTHESIS_HOME_VARIABLE = "HYPOTHESIS_STORAGE_DIRECTORY"


@contextlib.contextmanager
def _hypothesis_home_outside_cwd() -> Iterator[None]:
    if os.environ.get(HYPOTHESIS_HOME_VARIABLE):  # the caller chose a place: theirs
        yield
        return
    with tempfile.TemporaryDirectory(prefix="gptlab-hypothesis-") as home:
        os.environ[HYPOTHESIS_HOME_VARIABLE] = home
        try:
            yield
        finally:
            os.environ.pop(HYPOTHESIS_HOME_VARIABLE, None)


def main(argv: list[str]) -> int:
    if "-h" in argv or "--help" in argv:
        print(USAGE)
        return 0
    with _hypothesis_home_outside_cwd():  # nothing is left in the caller's folder
        return _grade(argv)


def _grade(argv: list[str]) -> int:
    reaper.guard_grading_process()  # orphans of a run come here, and are ended
    own, pytest_args = (
        (argv[: argv.index("--")], argv[argv.index("--") + 1 :]) if "--" in argv else (argv, [])
    )
    if any(arg == "--submissions" or arg.startswith("--submissions=") for arg in own) or (
        own and own[0] == "merge"
    ):
        from gptlab_testkit.commands.classroom import (
            main as grade_class,  # (tqdm and the rest: only for a class)
        )

        if own[0] != "merge" and (refused := sandbox.refusal()):
            print(refused, file=sys.stderr)  # never judged weaker than the sandbox
            return 2
        return int(grade_class(own, pytest_args))
    try:
        options = parse_options(own)
        assignments = parse_assignments(options.candidates)
    except RefusedSubmissionError as error:  # a link: nothing graded, nothing earned
        print(f"grade: refused: {error}", file=sys.stderr)
        write_outputs(options, SuiteRun(4, [], "", f"refused: {error}"))
        return 4
    except UsageError as error:
        print(f"grade: {error}", file=sys.stderr)
        return 2

    os.environ.update(assignments)
    print("gptlab grade: modules graded")
    for line in module_lines():
        print("  " + line)
    if swapped_variables(assignments):
        sandbox.start_probe()  # can the worker be sandboxed? asked before the run (below)
    if not Path.cwd().resolve().is_relative_to(options.root):
        print(f"  suites of the checkout {options.root}")
    paths, ladder = selection(options.root, assignments, options.full)
    if ladder:
        print(f"\nselected: {len(paths)} test files that load a swapped variable (--full: all)")
    print(flush=True)
    warm_up()
    if swapped_variables(assignments) and (refused := sandbox.refusal()):
        print(refused, file=sys.stderr)  # never judged weaker than the sandbox
        write_outputs(options, SuiteRun(4, [], "", refused))
        return 4
    run = grade_run(paths, assignments, options, pytest_args, ladder).wait()
    run.not_rerun = not_rerun(run, ladder)
    if no_verdict(run):
        write_outputs(options, run)
        for line in not_graded_lines(run):  # the last line a learner reads: the cause
            print(line, file=sys.stderr, flush=True)
        return 4
    if run.problem:
        kind = "" if run.forfeit else "candidate error: "
        print(f"grade: {kind}{run.problem}", file=sys.stderr)
    if swapped_variables(assignments) and run.results:
        print("\n".join(verdict_lines(run.results, run.not_rerun)), flush=True)
        if run.forfeit:
            print(run.problem, flush=True)
    write_outputs(options, run)
    return 4 if run.problem and not run.results else run.returncode


def no_verdict(run: SuiteRun) -> bool:
    """Not graded: a candidate could not be imported, or the submission was refused."""
    return run.not_graded or bool(run.problem and not run.results and not run.forfeit)


def not_graded_lines(run: SuiteRun) -> list[str]:
    """A run with no verdict: the hint for its cause, then (last) the cause itself."""
    expected = sum(result.outcome != "skipped" for result in run.results)
    cause = run.problem or f"the run reported no test (exit {run.returncode}; see above)"
    counted = f" (0 of {expected} expected tests ran)" if run.not_graded else ""
    hint = [f"grade: hint: {hint_for(cause)}"] if run.problem else []
    return [*hint, f"grade: not graded{counted}: {cause}"]


def not_rerun(run: SuiteRun, ladder: list[str]) -> tuple[str, ...]:
    """Packages of the ladder none of whose graded tests ran (they cannot see a candidate)."""
    if not run.results:
        return ()
    ran = {result.package for result in run.results}
    return tuple(package for package in ladder if package not in ran)


def write_outputs(options: argparse.Namespace, run: SuiteRun) -> None:
    if options.json:
        write_report(
            options.json,
            run.results,
            graded_modules(),
            returncode=run.returncode,
            not_rerun=list(run.not_rerun),
            problem=run.problem,
            not_graded=no_verdict(run),
            rubric=evidence_payload(evidence(run.results, swapped_packages())),
        )
    if options.gradescope:
        write_gradescope(
            options.gradescope,
            run.results,
            graded_modules(),
            run.not_rerun,
            run.problem,
            points=options.gradescope_points,
            visibility=options.gradescope_visibility,
            seconds=run.seconds,
            not_graded=no_verdict(run),
        )


def run() -> None:
    """The command: grade's last line is its verdict (or the cause of none), so it ends
    here, and nothing the interpreter's teardown prints (an extension module's leak
    report) follows it."""
    code = main(sys.argv[1:])
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
