"""Load the implementation under test from an environment variable.

Every suite reaches the code it grades through one of the variables below, never
by a direct import, so a stranger's module can be swapped in without touching a
test. A value is an importable module name or a path to a ``.py`` file.
"""

from __future__ import annotations

import ast
import importlib
import os
import sys
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

from gptlab_testkit.loading.attempts import ATTEMPT_SUFFIX, load_attempt_file
from gptlab_testkit.loading.cannot_grade import import_cause, record_cause
from gptlab_testkit.loading.variables import DRILL_CATALOGUE_GROUP as DRILL_CATALOGUE_GROUP
from gptlab_testkit.loading.variables import DRILL_PREFIX as DRILL_PREFIX
from gptlab_testkit.loading.variables import MECHANISM_VARIABLES as MECHANISM_VARIABLES
from gptlab_testkit.loading.variables import VARIABLE_BY_PACKAGE as VARIABLE_BY_PACKAGE
from gptlab_testkit.loading.variables import VARIABLES as VARIABLES
from gptlab_testkit.loading.variables import Variable as Variable
from gptlab_testkit.loading.variables import drill_catalogue as drill_catalogue


def folder_assignments(folder: Path) -> dict[str, Path]:
    """{VARIABLE: file} for the modules of an attempt folder named like the seed's labs.

    `tiny_gpt.py`, `cache_aware_lm.py`, `kv_cache.py`, `prefix_cache.py`,
    `chunked_prefill.py`, `speculative_decoding.py` (or `speculative.py`), each also as
    `<name>_attempt.py`; an `_attempt` file wins over its plain twin (the seed's labs
    keep the reference beside the attempt). Variables with no file are left out.
    """
    files = {path.stem: path for path in folder.glob("*.py")}
    assignments: dict[str, Path] = {}
    for variable in VARIABLES.values():
        for stem in variable.stems:
            found = files.get(stem + ATTEMPT_SUFFIX) or files.get(stem)
            if found is not None:
                assignments[variable.name] = found.resolve()
                break
    return assignments


class CandidateError(Exception):
    """A candidate could not be imported or lacks a graded name (one-line message)."""


def module_spec(variable: str) -> str:
    """The module name or path a variable currently selects (its default when unset)."""
    value = os.environ.get(variable, "").strip()
    return value or VARIABLES[variable].default_module


def is_reference(variable: str) -> bool:
    return module_spec(variable) == VARIABLES[variable].default_module


def import_spec(spec: str) -> ModuleType:
    """Import a module by dotted name, or by path when ``spec`` names a ``.py`` file."""
    if spec.endswith(".py") or os.sep in spec:
        path = Path(spec).expanduser().resolve()
        if not path.is_file():
            raise FileNotFoundError(f"no such file: {path}")
        return load_attempt_file(path)
    try:
        return importlib.import_module(spec)
    except ModuleNotFoundError as error:
        # Convenience for `MODULE=my_attempt` with my_attempt.py in the working directory.
        local = Path.cwd() / f"{spec}.py"
        if error.name == spec and local.is_file():
            return load_attempt_file(local)
        raise


def _innermost_user_frame(error: BaseException) -> str:
    """' (file.py:line)' of the deepest frame outside the import machinery, if any."""
    where = ""
    tb = error.__traceback__
    here = str(Path(__file__).parent)  # this package's loader frames are not the user's
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if not filename.startswith(("<frozen", here)) and "importlib" not in filename:
            where = f" ({Path(filename).name}:{tb.tb_lineno})"
        tb = tb.tb_next
    if isinstance(error, SyntaxError):
        return ""  # its message already names the file and line
    return where if "candidates.py" not in where else ""


def _judged_file(variable: str, spec: str) -> bool:
    """Is `spec` a candidate file that runs in a worker (gptlab_testkit.judge)?"""
    from gptlab_testkit.judge.policy import judged

    return spec.endswith(".py") and spec != VARIABLES[variable].default_module and judged(variable)


def _judged_module(variable: str, spec: str) -> Any:
    """Judge mode: a candidate file runs in a worker, never here (gptlab_testkit.judge)."""
    from gptlab_testkit.judge.client import remote_module

    return remote_module(variable, spec) if _judged_file(variable, spec) else None


def spawn_judged_workers() -> None:
    """In a run that grades candidates: start each judged candidate's worker interpreter
    now (`judge.client.spawn_early`), so that it is ready when the tests ask for it."""
    if os.environ.get("GPTLAB_LISTING_EXPECTED"):
        return
    from gptlab_testkit.judge.client import spawn_early

    specs = [(variable, module_spec(variable)) for variable in VARIABLES]
    spawn_early([(v, spec) for v, spec in specs if _judged_file(v, spec) and Path(spec).is_file()])


@cache
def load_candidate(variable: str) -> ModuleType:
    """Import the module a variable selects and check every graded name exists.

    Raises CandidateError with one line naming the variable, the module and what failed.
    """
    if variable not in VARIABLES:
        raise CandidateError(f"unknown implementation variable {variable!r}")
    spec = module_spec(variable)
    if os.environ.get("GPTLAB_LISTING_EXPECTED"):  # listing the expected tests: no candidate
        spec = VARIABLES[variable].default_module  # code runs (gptlab_testkit.running.expected)
    try:
        module = _judged_module(variable, spec) or import_spec(spec)
    except Exception as error:  # any failure of a stranger's module is reported, not raised
        cause = import_cause(error, _innermost_user_frame(error))
        raise CandidateError(f"{variable}={spec}: module could not be imported: {cause}") from None
    missing = [name for name in VARIABLES[variable].required_names if not hasattr(module, name)]
    if missing:
        # An attempt file's module name is private (attempts.py): its file name reads better.
        shown = Path(module.__file__ or "").name if "gptlab_candidate_" in module.__name__ else ""
        raise CandidateError(
            f"{variable}={spec}: module {shown or module.__name__!r} does not define "
            + ", ".join(repr(name) for name in missing)
        )
    return module


# One-line errors of candidates that failed while a test module was being collected;
# the pytest plugin turns the first into a session exit instead of a traceback wall.
collection_errors: list[str] = []


# Test file -> the variables it (or a helper it called) loaded: which candidates a
# test exercises, so a hanging or crashing candidate can be stopped across suites.
variables_used: dict[str, set[str]] = {}


def _record_use(variable: str) -> None:
    frame = sys._getframe(2)
    here = str(Path(__file__).parent)
    while frame is not None and frame.f_code.co_filename.startswith(here):
        frame = frame.f_back  # type: ignore[assignment]
    if frame is not None:
        variables_used.setdefault(frame.f_code.co_filename, set()).add(variable)


# Helpers of this package that load a variable for their caller.
_LOADING_HELPERS = {"cache_aware_modules": "CACHE_AWARE_LM_MODULE"}


@cache
def named_variables(source_file: Path) -> frozenset[str]:
    """Variables a file names in its source: a `candidate("KV_CACHE_MODULE")` call, any
    other string equal to a variable's name, or a helper that loads one
    (`cache_aware_modules`). Read without importing, so it holds for a test that loads
    its candidate only while it runs, and for a file that was never collected.
    """
    try:
        tree = ast.parse(source_file.read_text(encoding="utf-8"), filename=str(source_file))
    except (OSError, SyntaxError, ValueError):
        return frozenset(VARIABLES)  # unreadable: assume it sees every candidate
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and node.value in VARIABLES:
            found.add(node.value)
        name = node.id if isinstance(node, ast.Name) else getattr(node, "attr", None)
        if isinstance(name, str) and name in _LOADING_HELPERS:
            found.add(_LOADING_HELPERS[name])
    return frozenset(found)


def _conftests_above(test_file: Path) -> list[Path]:
    return [folder / "conftest.py" for folder in test_file.resolve().parents]


def static_variables_of(test_file: Path) -> frozenset[str]:
    """Variables a test file or a conftest.py in one of its folders names (see above)."""
    found = set(named_variables(test_file.resolve()))
    for conftest in _conftests_above(test_file):
        if conftest.is_file():
            found |= named_variables(conftest)
    return frozenset(found)


def variables_of(test_file: Path) -> tuple[str, ...]:
    """Variables a test exercises: those its file or a conftest.py in one of its folders
    loaded while being imported, and those they name in their source (a load that
    happens only while a test runs). One record, used twice: by the stop list (whom to
    stop when a test hangs) and by grade's selection (which tests can see a candidate).
    """
    found: set[str] = set(static_variables_of(test_file))
    for filename, variables in variables_used.items():
        path = Path(filename)
        if path == test_file or (
            path.name == "conftest.py" and test_file.is_relative_to(path.parent)
        ):
            found |= variables
    return tuple(sorted(found))


# pytest's norecursedirs of this repository (pyproject.toml) that could hold test files.
_SKIPPED_FOLDERS = {"known_bad", "faithful", "build", "dist", "venv", "node_modules"}


def suite_files(paths: list[str] | tuple[str, ...]) -> list[Path]:
    """The test_*.py files pytest would collect from these folders or files, sorted."""
    files: list[Path] = []
    for entry in map(Path, paths):
        if entry.is_file():
            files.append(entry)
        elif entry.is_dir():
            files += sorted(
                path
                for path in entry.rglob("test_*.py")
                if not _SKIPPED_FOLDERS & set(path.relative_to(entry).parts[:-1])
                and not any(part.startswith(".") for part in path.relative_to(entry).parts)
            )
    return files


def select_test_files(paths: list[str] | tuple[str, ...], swapped: set[str]) -> list[str]:
    """The test files (under `paths`) that can see at least one swapped variable.

    A test reaches an implementation only through its variable, so a file that never
    names one of the swapped variables (nor has a conftest.py that does) gives the
    references' verdict whatever the candidate: it need not run again.
    """
    return [str(path) for path in suite_files(paths) if static_variables_of(path) & swapped]


def candidate(variable: str) -> ModuleType:
    """The test-facing loader: a broken candidate ends the pytest session with one line."""
    _record_use(variable)
    try:
        return load_candidate(variable)
    except CandidateError as error:
        collection_errors.append(str(error))
        record_cause(str(error))  # the grading run's "cannot be graded" line (cannot_grade)
        raise
