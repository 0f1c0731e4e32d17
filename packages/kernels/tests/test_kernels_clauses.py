"""Every clause of each kernel's contract has its tests, and every test names real clauses.

The README states each kernel's contract as numbered clauses (`T01.2`); each test names the
clauses it checks. Contract tests name the kit's clauses (graded or not graded), extension
tests only this project's (or a not-graded one: the GPU path), and every clause that is
tested has a test. That each graded clause's one-clause mutant is caught is known_bad's
part (`clause_mutants/<id>.toml`)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gptlab_testkit.clauses import EXTENSION, NOT_GRADED, clauses_of, marked_tests

pytestmark = [pytest.mark.extension, pytest.mark.owner("grading")]

PACKAGE = Path(__file__).parents[1]
CONTRACT_MODULE = re.compile(
    r"^pytestmark = \[pytest\.mark\.owner\(\"t\d\d\"\), pytest\.mark\.contract", re.M
)
KERNELS = ("T01", "T02", "T03", "T04", "T05", "T06", "T07", "T08")


def kernel_tests(kernel: str, contract: bool) -> list:
    folder = PACKAGE / "tests" / kernel.lower()
    files = {
        p
        for p in folder.glob("test_*.py")
        if bool(CONTRACT_MODULE.search(p.read_text())) == contract
    }
    return [test for test in marked_tests(folder) if test.path in files]


@pytest.mark.parametrize("kernel", KERNELS)
def test_contract_tests_name_the_kits_clauses_and_cover_every_graded_one(kernel):
    clauses = clauses_of(PACKAGE / "README.md", kernel)
    tests = kernel_tests(kernel, contract=True)
    named = {c for test in tests for c in test.clauses}

    assert tests and all(test.clauses for test in tests), "a contract test names no clause"
    assert all(clauses[c].kind != EXTENSION for c in named), f"{kernel}: extension clause named"
    graded = {c for c, clause in clauses.items() if clause.graded}
    assert graded <= named, f"{kernel}: graded clauses without a test: {sorted(graded - named)}"


@pytest.mark.parametrize("kernel", KERNELS)
def test_extension_tests_name_only_extension_clauses_and_cover_each(kernel):
    clauses = clauses_of(PACKAGE / "README.md", kernel)
    tests = kernel_tests(kernel, contract=False)
    named = {c for test in tests for c in test.clauses}

    assert all(clauses[c].kind == EXTENSION for c in named), f"{kernel}: a graded clause named"
    extension = {c for c, clause in clauses.items() if clause.kind == EXTENSION}
    assert extension <= named, f"{kernel}: extension clauses untested: {sorted(extension - named)}"
    assert all(
        clause.kind in (EXTENSION, NOT_GRADED) or clause.graded for clause in clauses.values()
    )
