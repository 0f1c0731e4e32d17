"""Every sentence of a drill's contract is a test: clauses and the tests that name them.

Each drill's README section states its rules as numbered clauses (`P05.2`); each test of
the drill's suite names the clauses it checks (`@pytest.mark.clause("P05.2")`). A graded
clause without a test, a test naming a clause that does not exist, and a test naming none
all fail here. That each graded clause's one-clause mutant is caught is the known-bad
ladder's part (`clause_mutants/`, `nox -s known_bad`).
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from gptlab_drills.catalogue import DRILLS
from gptlab_testkit.clauses import clauses_of, marked_tests, traceability_problems

pytestmark = [pytest.mark.owner("grading"), pytest.mark.extension]

PACKAGE = Path(__file__).parents[1]
README = PACKAGE / "README.md"
MUTANTS = PACKAGE / "clause_mutants"


@pytest.mark.parametrize("drill_id", sorted(DRILLS))
def test_the_drills_contract_is_a_list_of_clauses(drill_id):
    clauses = clauses_of(README, drill_id)

    assert clauses, f"{drill_id}'s README section states no numbered clause"
    assert any(clause.graded for clause in clauses.values()), f"{drill_id}: nothing graded"


@pytest.mark.parametrize("drill_id", sorted(DRILLS))
def test_every_graded_clause_has_a_test_and_every_test_names_real_clauses(drill_id):
    clauses = clauses_of(README, drill_id)
    tests = marked_tests(PACKAGE / "tests" / drill_id.lower())

    assert tests, f"{drill_id} has no tests"
    problems = traceability_problems(clauses, tests)
    assert not problems, f"{drill_id}:\n" + "\n".join(problems)


@pytest.mark.parametrize("drill_id", sorted(DRILLS))
def test_every_graded_clause_has_a_one_clause_mutant(drill_id):
    clauses = clauses_of(README, drill_id)
    path = MUTANTS / f"{drill_id.lower()}.toml"
    mutants = tomllib.loads(path.read_text(encoding="utf-8"))["mutant"] if path.exists() else []

    named = {mutant["clause"] for mutant in mutants}
    unknown = sorted(named - set(clauses))
    missing = sorted(c.id for c in clauses.values() if c.graded and c.id not in named)
    assert not unknown, f"{path.name} names clauses that do not exist: {unknown}"
    assert not missing, f"{drill_id}: graded clauses without a mutant: {missing}"
