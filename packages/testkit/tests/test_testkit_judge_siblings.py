"""A judged candidate may import the siblings its contract names, never its reference.

(Variables are looked up by package here, not named: a test file naming one is selected
to grade that variable's candidates.)
"""

from __future__ import annotations

import pytest

from gptlab_testkit.candidates import VARIABLE_BY_PACKAGE
from gptlab_testkit.judge.policy import REFUSED, refused_modules, siblings

pytestmark = [pytest.mark.extension, pytest.mark.owner("grading")]


def variable_of(package: str) -> str:
    return VARIABLE_BY_PACKAGE[package].name


def test_the_scheduler_may_use_paged_kv_and_the_models_but_not_itself() -> None:
    allowed = siblings(variable_of("scheduler"))
    assert {"paged_kv", "cache_aware_lm", "tinygpt", "modern_lm"} <= allowed
    refused = set(refused_modules(variable_of("scheduler")))
    assert "scheduler" in refused and "gptlab_testkit" in refused and "pytest" in refused
    assert not allowed & refused


def test_a_mechanism_without_siblings_and_a_drill_refuse_every_package() -> None:
    # a drill's variable, whether or not gptlab-drills is installed here
    drill = "_".join(["DRILL", "P19", "MODULE"])
    # kv_cache needs only its argument checks (gptlab-arg-checks), no mechanism
    assert siblings(variable_of("kv_cache")) == frozenset({"arg_checks"})
    assert siblings(drill) == frozenset()
    assert refused_modules(drill) == REFUSED
