"""Every clause of each kernel's contract has its tests, and every test names real clauses.

The README states each kernel's contract as numbered clauses (`T01.2`); each test names the
clauses it checks. Contract tests name the kit's clauses (graded or not graded), extension
tests only this project's, and every clause that is tested has a test
(`gptlab_testkit.clauses` traces both ways). That each graded clause's one-clause mutant
is caught is known_bad's part (`clause_mutants/<id>.toml`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gptlab_testkit import clauses

pytestmark = [pytest.mark.extension, pytest.mark.owner("grading")]

PACKAGE = Path(__file__).parents[1]
README = PACKAGE / "README.md"
KERNELS = ("T01", "T02", "T03", "T04", "T05", "T06", "T07", "T08")


@pytest.mark.parametrize("kernel", KERNELS)
def test_contract_tests_name_the_kits_clauses_and_cover_every_graded_one(kernel):
    clauses.assert_contract_traced(README, PACKAGE / "tests" / kernel.lower(), kernel, at_least=1)


@pytest.mark.parametrize("kernel", KERNELS)
def test_extension_tests_name_only_extension_clauses_and_cover_each(kernel):
    clauses.assert_extensions_traced(README, PACKAGE / "tests" / kernel.lower(), kernel)
