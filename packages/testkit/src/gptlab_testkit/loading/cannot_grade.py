"""Why a candidate cannot be graded, in one line naming the cause, and a hint fitting it.

`import_cause` words an import failure by what was seen (a syntax error and its line,
a module that is neither beside the attempt nor installed, a name the seed-named
stand-in lacks, an exception raised by the module's own code); `hint_for` reads a
"cannot be graded" line (`load_candidate`'s, or a run's that stopped an import past
its limit) and returns the advice for that cause only. Both sides live here so the
phrases a hint keys on cannot drift from the messages that carry them.

A judged candidate is imported in its worker, which reports the failure as its type and
text (`ModuleNotFoundError: No module named 'x'`); those texts are worded the same way.
`record_cause` / `recorded_cause` carry the first such line out of a grading run (a file
the run's process writes), so grade's last line, the class row and results.json name the
cause instead of "the process importing ... died".
"""

from __future__ import annotations

import contextlib
import os
import re
from pathlib import Path

from gptlab_testkit.loading.seed_modules import SEED_MODULES, reference_of

_SYNTAX = "syntax error at"
_MISSING_MODULE = "missing module"
_STAND_IN = "stood in for the seed's"
_NOT_DEFINED = "does not define"  # load_candidate's missing graded name
_HUNG = "did not finish within"  # suites.ForkedRun stopping an import past its limit


# The worker's report of a failed import: "TypeName: text" (the judge's client raises ImportError).
_JUDGED_MISSING = re.compile(r"^ModuleNotFoundError: No module named '([\w.]+)'$")
_JUDGED_SYNTAX = re.compile(
    r"^(?:SyntaxError|IndentationError|TabError): (.*) \((.+), line (\d+)\)$"
)
# Where a grading run writes the first "cannot be graded" line (`record_cause`).
CAUSE_FILE_VARIABLE = "GPTLAB_CANNOT_GRADE_FILE"


def _judged_cause(text: str) -> str:
    """A worker's "Type: text" import failure worded as in-process ("" if not one)."""
    missing = _JUDGED_MISSING.match(text)
    if missing:
        name = missing[1]
        return (
            f"{_MISSING_MODULE} {name!r}: no {name.split('.')[0]}.py beside the attempt "
            "and nothing installed by that name"
        )
    syntax = _JUDGED_SYNTAX.match(text)
    if syntax:
        return f"{_SYNTAX} {Path(syntax[2]).name} line {syntax[3]}: {syntax[1]}"
    return ""


def import_cause(error: BaseException, where: str) -> str:
    """The cause of a failed import; `where` is ' (file.py:line)' of the failing frame."""
    if type(error) is ImportError and (judged := _judged_cause(str(error))):
        return judged
    if isinstance(error, SyntaxError):
        filename = Path(error.filename).name if error.filename else "the file"
        return f"{_SYNTAX} {filename} line {error.lineno}: {error.msg}"
    if isinstance(error, ModuleNotFoundError) and error.name:
        return (
            f"{_MISSING_MODULE} {error.name!r}: no {error.name.split('.')[0]}.py beside "
            f"the attempt and nothing installed by that name{where}"
        )
    if isinstance(error, ImportError) and error.name in SEED_MODULES:
        name = error.name
        return (
            f"{error}{where}: with no {name}.py beside the attempt, this project's "
            f"{reference_of(name)} {_STAND_IN} {name}, and it lacks that name"
        )
    return f"{type(error).__name__}: {error}{where}"


def hint_for(reason: str) -> str:
    """Advice for the cause a "cannot be graded" line names (a general one otherwise)."""
    if _SYNTAX in reason:
        return "fix that line: the file must import before any test can run"
    if _MISSING_MODULE in reason:
        return (
            "put that module beside the attempt (plain modules of one folder import each "
            "other by name), or import only the standard library and torch"
        )
    stand_in = re.search(rf"this project's (\w+) {_STAND_IN} (\w+)", reason)
    if stand_in:
        reference, seed = stand_in.groups()
        return (
            f"write {seed} too (in a practice home: `practice start {reference}`; in a "
            f"folder: {seed}.py beside this file), or import only names {reference} has"
        )
    if _NOT_DEFINED in reason:
        return "every graded name must exist from stage 1 on (a stub until its stage)"
    if _HUNG in reason:
        return (
            "importing the file must not wait or loop: move long work from module level "
            "into the functions the tests call"
        )
    return "the file must import on its own: run `python FILE` to see the whole traceback"


def record_cause(line: str) -> None:
    """Keep the run's first "cannot be graded" line where its grader reads it (if asked)."""
    path = os.environ.get(CAUSE_FILE_VARIABLE)
    if path and not os.path.exists(path):
        with contextlib.suppress(OSError):
            Path(path).write_text(line.splitlines()[0] if line else "", encoding="utf-8")


def recorded_cause(path: Path) -> str:
    """The line `record_cause` kept in `path` ("" when none)."""
    try:
        return path.read_text(encoding="utf-8", errors="replace").strip()[:2000]
    except OSError:
        return ""
