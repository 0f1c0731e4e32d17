"""M10's README clauses and this suite's tests, traced both ways (`gptlab_testkit.clauses`).

Each graded clause's one-clause mutant is the known-bad ladder's part (`bad_fragment_lm_*.py`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gptlab_testkit import clauses

pytestmark = [pytest.mark.extension, pytest.mark.owner("grading")]

README, TESTS = Path(__file__).parents[1] / "README.md", Path(__file__).parent


def test_the_contract_is_a_list_of_clauses():
    clauses.assert_clause_counts(README, "M10", at_least=15, graded=11)


def test_every_graded_clause_has_a_test_and_every_contract_test_names_real_clauses():
    clauses.assert_contract_traced(README, TESTS, "M10", at_least=30)


def test_extension_tests_name_only_extension_clauses_and_cover_each():
    clauses.assert_extensions_traced(README, TESTS, "M10")
