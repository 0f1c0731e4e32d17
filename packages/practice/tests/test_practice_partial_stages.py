"""Stages a learner can follow: for every stage of the nine mechanisms (and modern_lm's named
re-solve), an attempt that builds exactly what that stage's `build` text and the earlier
ones say passes the stage's check.

The partial attempts are tests/partial_attempts.py's (the `partial_attempt` fixture): a
faithful candidate with what later stages' texts build taken out, the single-function
mechanisms included (a function that refuses the inputs a later stage teaches it). The
verdict is the check's own (`stage_verdicts`): every selected test passes.

Cost: one grader run per stage (41, and the re-solve's), 1-30 s each: 241 s in all at load
8 on the shared 2-core machine (134 s at load 3), the slowest file of the suite
(`-m "not slow"` leaves it out; `nox -s practice_tests` runs it).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from gptlab_practice.grader import attempt_filename, run_stage
from gptlab_practice.stages import mechanisms, resolves
from gptlab_practice.verdicts import stage_verdicts

pytestmark = [pytest.mark.extension, pytest.mark.owner("practice"), pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[3]


STAGES = [(name, s.number) for name, m in mechanisms().items() for s in m.stages]


def _passes(unit: str, stage: int, attempt: Path) -> None:
    mechanism = {**mechanisms(), **resolves()}[unit]
    run = run_stage(ROOT, mechanism, stage, attempt)
    verdict = stage_verdicts(mechanism, run, stage, stage)[-1]
    failed = [f"{r.nodeid}: {r.reason}" for r in verdict.failed]
    assert verdict.passed, verdict.reason + "\n" + "\n".join(failed[:12])


@pytest.mark.parametrize(("name", "stage"), STAGES, ids=[f"{n}-{s}" for n, s in STAGES])
def test_a_partial_attempt_passes_its_stage(
    name: str, stage: int, tmp_path: Path, partial_attempt: Callable[[str, int], str]
) -> None:
    attempt = tmp_path / attempt_filename(name)
    attempt.write_text(partial_attempt(name, stage))
    _passes(name, stage, attempt)


def test_the_layer_reconstruction_passes_with_stage_one_of_modern_lm(
    tmp_path: Path, partial_attempt: Callable[[str, int], str]
) -> None:
    """The named re-solve builds what modern_lm's stage 1 builds (one layer, its forward)."""
    unit = resolves()["modern_lm:layer_reconstruction"]
    attempt = tmp_path / attempt_filename(unit)
    attempt.write_text(partial_attempt("modern_lm", 1))
    _passes(unit.package, 1, attempt)


# Each named re-solve builds what its build's stages up to one of them build.
RESOLVES_AT = {
    "cache_aware_lm:reconstruction": ("cache_aware_lm", 4),
    "runtime_lm:port": ("runtime_lm", 1),
    "moe_lm:block": ("moe_lm", 1),
    "fragment_lm:resolve": ("fragment_lm", 2),
}


@pytest.mark.parametrize("key", list(RESOLVES_AT))
def test_a_named_re_solve_passes_with_the_stages_it_rebuilds(
    key: str, tmp_path: Path, partial_attempt: Callable[[str, int], str]
) -> None:
    unit = resolves()[key]
    attempt = tmp_path / attempt_filename(unit)
    attempt.write_text(partial_attempt(*RESOLVES_AT[key]))
    _passes(unit.package, 1, attempt)
