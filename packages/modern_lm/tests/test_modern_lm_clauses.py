"""Every sentence of M02's contract is a test: the README's clauses and the tests naming them.

The README states the contract as numbered clauses (`M02.14`); each contract test names the
clauses it checks (`@pytest.mark.clause("M02.14")`). A graded clause without a test, a test
naming a clause that does not exist and a contract test naming none all fail here. That
each graded clause's one-clause mutant is caught is the known-bad ladder's part
(`integration_tests/known_bad/bad_m02_*.py`, each declaring its `CLAUSE`).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gptlab_testkit.clauses import clauses_of, marked_tests, traceability_problems

pytestmark = [pytest.mark.extension, pytest.mark.owner("grading")]

PACKAGE = Path(__file__).parents[1]
TESTS = PACKAGE / "tests"
CONTRACT_MODULE = re.compile(r"^pytestmark = \[pytest\.mark\.contract\b", re.MULTILINE)


def contract_tests():
    """The marked tests of the files whose module-level marks include ``contract``."""
    contract_files = {
        path for path in TESTS.glob("test_*.py") if CONTRACT_MODULE.search(path.read_text())
    }
    return [test for test in marked_tests(TESTS) if test.path in contract_files]


def test_the_contract_is_a_list_of_clauses():
    clauses = clauses_of(PACKAGE / "README.md", "M02")

    assert len(clauses) >= 30, sorted(clauses)
    assert sum(clause.graded for clause in clauses.values()) >= 30


def test_every_graded_clause_has_a_test_and_every_contract_test_names_real_clauses():
    tests = contract_tests()

    assert len(tests) >= 40, [test.name for test in tests]
    problems = traceability_problems(clauses_of(PACKAGE / "README.md", "M02"), tests)
    assert not problems, "\n".join(problems)


def test_extension_tests_name_no_clause():
    """Extension tests check this package beyond the contract: naming a clause would make
    a clause look graded by a test that never grades a candidate."""
    extension = [test for test in marked_tests(TESTS) if test not in contract_tests()]

    assert extension, "no extension test found"
    assert not [test.name for test in extension if test.clauses]
