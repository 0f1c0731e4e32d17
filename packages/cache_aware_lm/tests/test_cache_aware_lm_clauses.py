"""M03's advanced branch as a list of clauses: the README's M03.n and the tests naming them.

The README states what the advanced branch adds to the cache-aware contract as numbered
clauses (`M03.4`); each test of `test_cache_aware_lm_over_m02.py` names the clauses it
checks (`@pytest.mark.clause("M03.4")`). A graded clause without a test, a test naming a
clause that does not exist and a test there naming none all fail here. That each graded
clause's one-clause mutant is caught is the known-bad ladder's part
(`integration_tests/known_bad/bad_cache_aware_modern_*.py`, each declaring its `CLAUSE`).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gptlab_testkit.clauses import (
    EXTENSION,
    NOT_GRADED,
    clauses_of,
    marked_tests,
    traceability_problems,
)

pytestmark = [pytest.mark.extension, pytest.mark.owner("m03_checkpoint")]

PACKAGE = Path(__file__).parents[1]
CLAUSED_FILE = PACKAGE / "tests" / "test_cache_aware_lm_over_m02.py"


def _clauses():
    return clauses_of(PACKAGE / "README.md", "M03")


def test_the_advanced_branch_is_a_list_of_clauses():
    clauses = _clauses()

    assert len(clauses) >= 8, sorted(clauses)
    assert sum(clause.graded for clause in clauses.values()) >= 7
    assert not [c.id for c in clauses.values() if c.kind == EXTENSION]  # all the kit's
    assert [c.id for c in clauses.values() if c.kind == NOT_GRADED]  # the freedoms, stated


def test_every_graded_clause_has_a_test_and_every_test_names_real_clauses():
    tests = [test for test in marked_tests(PACKAGE / "tests") if test.path == CLAUSED_FILE]

    assert len(tests) >= 9, [test.name for test in tests]
    problems = traceability_problems(_clauses(), tests)
    assert not problems, "\n".join(problems)
