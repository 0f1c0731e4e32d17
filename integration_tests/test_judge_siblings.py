"""A judged candidate may import the siblings its contract names, never its reference."""

from __future__ import annotations

import pytest

from gptlab_testkit.judge import REFUSED, _refused, siblings

pytestmark = [pytest.mark.extension, pytest.mark.owner("grading")]


def test_the_scheduler_may_use_paged_kv_and_the_models_but_not_itself() -> None:
    allowed = siblings("SCHEDULER_MODULE")
    assert {"paged_kv", "cache_aware_lm", "tinygpt", "modern_lm"} <= allowed
    refused = set(_refused("SCHEDULER_MODULE"))
    assert "scheduler" in refused and "gptlab_testkit" in refused and "pytest" in refused
    assert not allowed & refused


def test_a_mechanism_without_siblings_and_a_drill_refuse_every_package() -> None:
    assert siblings("KV_CACHE_MODULE") == frozenset()
    assert siblings("DRILL_P19_MODULE") == frozenset()
    assert _refused("DRILL_P19_MODULE") == REFUSED
