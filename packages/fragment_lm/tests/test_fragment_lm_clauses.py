"""Every sentence of M10's contract is a test: the README's clauses and the tests naming them.

The README states the contract as numbered clauses (`M10.9`); each contract test names the
clauses it checks (`@pytest.mark.clause("M10.9")`). A graded clause without a test, a test
naming a clause that does not exist and a contract test naming none all fail here. That
each graded clause's one-clause mutant is caught is the known-bad ladder's part
(`integration_tests/known_bad/bad_fragment_lm_*.py`, each declaring its `CLAUSE`).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gptlab_testkit.clauses import EXTENSION, clauses_of, marked_tests, traceability_problems

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
    clauses = clauses_of(PACKAGE / "README.md", "M10")

    assert len(clauses) >= 15, sorted(clauses)
    assert sum(clause.graded for clause in clauses.values()) >= 11


def test_every_graded_clause_has_a_test_and_every_contract_test_names_real_clauses():
    """Contract tests name graded (or not-graded) clauses only: an extension clause named
    by a contract test reads as "no such clause" here."""
    tests = contract_tests()
    clauses = clauses_of(PACKAGE / "README.md", "M10")
    kit_clauses = {id_: clause for id_, clause in clauses.items() if clause.kind != EXTENSION}

    assert len(tests) >= 30, [test.name for test in tests]
    problems = traceability_problems(kit_clauses, tests)
    assert not problems, "\n".join(problems)


def test_extension_tests_name_only_extension_clauses_and_cover_each():
    """An extension test naming a graded clause would make that clause look graded by a
    test that never grades a candidate; every extension clause has an extension test."""
    clauses = clauses_of(PACKAGE / "README.md", "M10")
    extension = [test for test in marked_tests(TESTS) if test not in contract_tests()]
    named = {clause_id for test in extension for clause_id in test.clauses}

    assert extension, "no extension test found"
    assert not [
        f"{test.name} names {clause_id}"
        for test in extension
        for clause_id in test.clauses
        if clause_id not in clauses or clauses[clause_id].kind != EXTENSION
    ]
    assert not [
        clause.id
        for clause in clauses.values()
        if clause.kind == EXTENSION and clause.id not in named
    ]
