"""`nox -s grade`: grade the whole slice, swapping in any candidates given.

    python -m gptlab_testkit.grade                         # references
    python -m gptlab_testkit.grade kv_cache attempt.py     # one candidate
    python -m gptlab_testkit.grade kv_cache=a.py speculative=b.py -- -x
    python -m gptlab_testkit.grade path/to/attempt_folder  # seed-style folder

Prints which module is graded for every variable, then the contract suites'
scorecard (per package, per tier for tinygpt), then each failure's owner and
repair target. Exit status is pytest's.
"""

from __future__ import annotations

import sys
from pathlib import Path

from .candidates import VARIABLE_BY_PACKAGE, VARIABLES, folder_assignments
from .reporting import module_lines
from .suites import run_pytest, suite_paths

USAGE = __doc__ or ""


class UsageError(Exception):
    pass


def _variable_for(key: str) -> str:
    if key in VARIABLES:
        return key
    if key in VARIABLE_BY_PACKAGE:
        return VARIABLE_BY_PACKAGE[key].name
    known = ", ".join(VARIABLE_BY_PACKAGE)
    raise UsageError(f"unknown package {key!r}: expected one of {known} (or a *_MODULE variable)")


def _module_value(value: str) -> str:
    """A path that exists is made absolute (pytest may run elsewhere); else a module name."""
    path = Path(value).expanduser()
    if value.endswith(".py"):
        if not path.is_file():
            raise UsageError(f"candidate file not found: {value}")
        return str(path.resolve())
    return value


def _folder_modules(folder: Path) -> dict[str, str]:
    found = folder_assignments(folder)
    if not found:
        names = ", ".join(f"{stem}.py" for v in VARIABLES.values() for stem in v.stems)
        raise UsageError(f"{folder}: no module named like the seed's files ({names})")
    return {variable: str(path) for variable, path in found.items()}


def parse_assignments(arguments: list[str]) -> dict[str, str]:
    """`pkg path`, `pkg=path`, `VARIABLE=path` pairs or attempt folders -> {VARIABLE: module}.

    A folder maps its seed-named modules (see `folder_assignments`); later arguments
    override what an earlier folder mapped.
    """
    assignments: dict[str, str] = {}
    pending: str | None = None
    for argument in arguments:
        if pending is not None:
            assignments[_variable_for(pending)] = _module_value(argument)
            pending = None
        elif "=" not in argument and Path(argument).expanduser().is_dir():
            assignments.update(_folder_modules(Path(argument).expanduser().resolve()))
        elif "=" in argument:
            key, value = argument.split("=", 1)
            assignments[_variable_for(key)] = _module_value(value)
        else:
            _variable_for(argument)
            pending = argument
    if pending is not None:
        raise UsageError(f"{pending}: missing the candidate path or module after it")
    return assignments


def main(argv: list[str]) -> int:
    if "-h" in argv or "--help" in argv:
        print(USAGE)
        return 0
    own, pytest_args = (
        (argv[: argv.index("--")], argv[argv.index("--") + 1 :]) if "--" in argv else (argv, [])
    )
    try:
        assignments = parse_assignments(own)
    except UsageError as error:
        print(f"grade: {error}", file=sys.stderr)
        return 2
    import os

    os.environ.update(assignments)
    print("gptlab grade: modules graded")
    for line in module_lines():
        print("  " + line)
    print(flush=True)
    run = run_pytest(
        suite_paths(Path.cwd()),
        assignments,
        ["-m", "contract", "-q", "--tb=line", "-rN", "--gptlab-scorecard", *pytest_args],
        capture=False,
    )
    return run.returncode


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
