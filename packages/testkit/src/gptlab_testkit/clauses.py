"""Numbered contract clauses: read them from a README, find the tests that name them.

A contract states its rules as numbered clauses, one bullet line each::

    - **P05.2** (semantics) `key_length` defaults to `query_length` (square prefill).
    - **P05.9** (not graded) the fill value of a blocked entry ...

and every contract test names the clauses it checks with ``@pytest.mark.clause("P05.2")``.
This module is the one reader of both, for the traceability tests (every graded clause
has a test, every named clause exists), the known-bad ladder (every graded clause has a
proved one-clause mutant) and the scorecard (a failure names the clauses it broke).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

KINDS = (
    "signature",
    "shape",
    "dtype",
    "semantics",
    "rejection",
    "aliasing",
    "determinism",
    "extension",
    "not graded",
)
NOT_GRADED = "not graded"
# A rule this project adds beyond the kit's or the seed's words: tested by extension tests,
# shown to a learner as "beyond the contract", never scored and never given a clause mutant.
EXTENSION = "extension"
# A semantic clause's mutant must fail this many tests; any other graded clause's, one.
SEMANTIC_CATCHES = 2

CLAUSE_LINE = re.compile(
    r"^- \*\*(?P<id>(?:P\d\d|PT\d\d|M\d\d|T\d\d)\.\d+)\*\* "
    r"\((?P<kind>" + "|".join(KINDS) + r")\) (?P<text>\S.*)$"
)
CLAUSE_ID = re.compile(r"^(?P<item>P\d\d|PT\d\d|M\d\d|T\d\d)\.(?P<number>[1-9]\d*)$")


@dataclass(frozen=True)
class Clause:
    id: str
    kind: str
    text: str

    @property
    def item(self) -> str:
        """The drill or build the clause belongs to: P05, PT17, M02."""
        return self.id.split(".", 1)[0]

    @property
    def graded(self) -> bool:
        """Part of the score: the kit's (or the seed's) own rule."""
        return self.kind not in (NOT_GRADED, EXTENSION)

    @property
    def tested(self) -> bool:
        """Has a test: every graded clause, and every extension clause (an extension test)."""
        return self.kind != NOT_GRADED

    @property
    def catches_needed(self) -> int:
        return SEMANTIC_CATCHES if self.kind == "semantics" else 1


class ClauseError(ValueError):
    """A clause list that breaks its own format (a duplicate or a gap in the numbering)."""


def readme_clauses(readme: Path) -> dict[str, Clause]:
    """Every clause line of a README, by id; duplicates and numbering gaps are errors."""
    found: dict[str, Clause] = {}
    for line in readme.read_text(encoding="utf-8").splitlines():
        match = CLAUSE_LINE.match(line)
        if match is None:
            continue
        clause = Clause(match["id"], match["kind"], match["text"])
        if clause.id in found:
            raise ClauseError(f"{readme.name}: clause {clause.id} is stated twice")
        found[clause.id] = clause
    for item in sorted({clause.item for clause in found.values()}):
        numbers = sorted(int(c.id.split(".")[1]) for c in found.values() if c.item == item)
        if numbers != list(range(1, len(numbers) + 1)):
            raise ClauseError(f"{readme.name}: {item}'s clauses are not numbered 1..n: {numbers}")
    return found


def clauses_of(readme: Path, item: str) -> dict[str, Clause]:
    """The clauses of one drill or build (``P05``, ``M02``), upper case."""
    return {k: c for k, c in readme_clauses(readme).items() if c.item == item.upper()}


def clause_order(clause_id: str) -> tuple[str, int]:
    """Sort key: by item, then by number (P05.2 before P05.10)."""
    item, _, number = clause_id.partition(".")
    return item, int(number) if number.isdigit() else 0


def clause_ids(args: Iterable[object]) -> tuple[str, ...]:
    """The ids a ``clause(...)`` marker names, checked for shape."""
    ids = tuple(str(arg) for arg in args)
    for clause_id in ids:
        if CLAUSE_ID.match(clause_id) is None:
            raise ClauseError(f"clause marker names {clause_id!r}: want an id like P05.3")
    return ids


@dataclass(frozen=True)
class MarkedTest:
    """A test function and the clauses its ``clause(...)`` decorators name."""

    path: Path
    name: str
    clauses: tuple[str, ...]


def _clause_marker_args(decorator: ast.expr) -> list[str] | None:
    """The string arguments of ``pytest.mark.clause(...)``, or None for another decorator."""
    if not isinstance(decorator, ast.Call):
        return None
    func = decorator.func
    if not (isinstance(func, ast.Attribute) and func.attr == "clause"):
        return None
    return [arg.value for arg in decorator.args if isinstance(arg, ast.Constant)]  # type: ignore[misc]


def marked_tests(folder: Path) -> list[MarkedTest]:
    """Every ``test_*`` function (module level or in a ``Test*`` class) of ``test_*.py``
    files under ``folder``, read without importing them."""
    tests: list[MarkedTest] = []
    for path in sorted(folder.rglob("test_*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        bodies = [tree.body] + [
            node.body
            for node in tree.body
            if isinstance(node, ast.ClassDef) and node.name.startswith("Test")
        ]
        for body in bodies:
            for node in body:
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and (
                    node.name.startswith("test_")
                ):
                    named: list[str] = []
                    for decorator in node.decorator_list:
                        named += _clause_marker_args(decorator) or []
                    tests.append(MarkedTest(path, node.name, tuple(named)))
    return tests


def traceability_problems(clauses: dict[str, Clause], tests: list[MarkedTest]) -> list[str]:
    """What breaks "every graded clause has a test and every test names real clauses"."""
    problems = [f"{t.path.name}::{t.name} names no clause" for t in tests if not t.clauses]
    named: set[str] = set()
    for test in tests:
        for clause_id in test.clauses:
            named.add(clause_id)
            if clause_id not in clauses:
                problems.append(f"{test.path.name}::{test.name} names {clause_id}: no such clause")
    problems += [
        f"{clause.id} ({clause.kind}) has no test: {clause.text[:80]}"
        for clause in clauses.values()
        if clause.tested and clause.id not in named
    ]
    return problems


# -- a package's README and its suite, traced both ways


def is_contract_file(path: Path) -> bool:
    """Whether a test file's module-level ``pytestmark`` carries ``pytest.mark.contract``
    (read without importing it)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(target, ast.Name) and target.id == "pytestmark" for target in node.targets
        ):
            return any(
                isinstance(mark, ast.Attribute) and mark.attr == "contract"
                for mark in ast.walk(node.value)
            )
    return False


def contract_tests(tests_dir: Path) -> list[MarkedTest]:
    """The marked tests of ``tests_dir``'s contract files (see `is_contract_file`)."""
    return [test for test in marked_tests(tests_dir) if is_contract_file(test.path)]


def assert_clause_counts(readme: Path, item: str, *, at_least: int, graded: int) -> None:
    """``item``'s README states at least ``at_least`` clauses, ``graded`` of them graded (a
    floor, so a section that lost its clause lines fails instead of tracing nothing)."""
    clauses = clauses_of(readme, item)
    scored = sum(clause.graded for clause in clauses.values())
    if len(clauses) < at_least or scored < graded:
        raise AssertionError(
            f"{item}: {len(clauses)} clauses ({scored} graded), want at least {at_least} "
            f"({graded} graded): {sorted(clauses, key=clause_order)}"
        )


def assert_contract_traced(readme: Path, tests_dir: Path, item: str, *, at_least: int) -> None:
    """Every graded clause of ``item`` has a contract test, every contract test names
    clauses and only the kit's (graded or not graded: an extension clause named by a
    contract test reads as "no such clause"), and there are ``at_least`` such tests."""
    clauses = {k: c for k, c in clauses_of(readme, item).items() if c.kind != EXTENSION}
    tests = contract_tests(tests_dir)
    problems = traceability_problems(clauses, tests)
    if len(tests) < at_least:
        problems.insert(0, f"{len(tests)} contract tests found, want at least {at_least}")
    if problems:
        raise AssertionError(f"{item}:\n" + "\n".join(problems))


def extension_problems(clauses: dict[str, Clause], tests: list[MarkedTest]) -> list[str]:
    """What breaks "extension tests name only extension clauses, and each has a test":
    an extension test naming a graded clause would make that clause look graded by a test
    that never grades a candidate."""
    problems = [] if tests else ["no extension test found"]
    problems += [
        f"{test.path.name}::{test.name} names {clause_id}: no such extension clause"
        for test in tests
        for clause_id in test.clauses
        if clause_id not in clauses or clauses[clause_id].kind != EXTENSION
    ]
    named = {clause_id for test in tests for clause_id in test.clauses}
    problems += [
        f"{clause.id} (extension) has no extension test: {clause.text[:80]}"
        for clause in clauses.values()
        if clause.kind == EXTENSION and clause.id not in named
    ]
    return problems


def assert_extensions_traced(readme: Path, tests_dir: Path, item: str) -> None:
    """The tests outside ``tests_dir``'s contract files name only ``item``'s extension
    clauses, and every extension clause has one."""
    contract = contract_tests(tests_dir)
    extension = [test for test in marked_tests(tests_dir) if test not in contract]
    problems = extension_problems(clauses_of(readme, item), extension)
    if problems:
        raise AssertionError(f"{item}:\n" + "\n".join(problems))


# -- which README states a test's clauses (for the scoring policy's test roles)

REJECTION = "rejection"


def _readme_candidates(test_file: Path) -> list[Path]:
    """Where a test file's clause README may be: the nearest README.md above it inside its
    `packages/<name>` folder, then that package's README in the checkout this testkit is
    installed from (a copy of the suites alone, as a class run of the cheats makes, has
    no README beside it; the clause kinds are this project's data, never a candidate's)."""
    parts = test_file.resolve().parts
    found: list[Path] = []
    if "packages" not in parts:
        return found
    index = len(parts) - 1 - parts[::-1].index("packages")
    if index + 1 >= len(parts) - 1:
        return found
    package_dir = Path(*parts[: index + 2])
    for folder in test_file.resolve().parents:
        if not folder.is_relative_to(package_dir):
            break
        found.append(folder / "README.md")
    own_checkout = Path(__file__).resolve().parents[4]  # packages/testkit/src/gptlab_testkit
    found.append(own_checkout / "packages" / parts[index + 1] / "README.md")
    return found


@cache
def _clauses_in(readme: Path) -> dict[str, Clause]:
    try:
        return readme_clauses(readme) if readme.is_file() else {}
    except (ClauseError, OSError, UnicodeDecodeError):
        return {}


def clause_kinds(test_file: Path, clause_ids_: Iterable[str]) -> dict[str, str]:
    """{clause id: kind} for the clauses a test of `test_file` names, read from the README
    that states them (see `_readme_candidates`); an id no README states is left out."""
    wanted = set(clause_ids_)
    kinds: dict[str, str] = {}
    for readme in _readme_candidates(test_file):
        clauses = _clauses_in(readme)
        for clause_id in wanted - set(kinds):
            if clause_id in clauses:
                kinds[clause_id] = clauses[clause_id].kind
        if len(kinds) == len(wanted):
            break
    return kinds


def names_only_rejections(test_file: Path, clause_ids_: Iterable[str]) -> bool:
    """Whether a test names clauses, every one of kind rejection in its README."""
    ids = tuple(clause_ids_)
    kinds = clause_kinds(test_file, ids) if ids else {}
    return bool(ids) and all(kinds.get(clause_id) == REJECTION for clause_id in ids)


__all__ = [
    "EXTENSION",
    "KINDS",
    "NOT_GRADED",
    "REJECTION",
    "SEMANTIC_CATCHES",
    "Clause",
    "ClauseError",
    "MarkedTest",
    "assert_clause_counts",
    "assert_contract_traced",
    "assert_extensions_traced",
    "clause_ids",
    "clause_kinds",
    "clause_order",
    "clauses_of",
    "contract_tests",
    "extension_problems",
    "is_contract_file",
    "marked_tests",
    "names_only_rejections",
    "readme_clauses",
    "traceability_problems",
]
