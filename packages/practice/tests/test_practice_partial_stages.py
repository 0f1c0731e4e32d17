"""Stages a learner can follow: for every stage of the nine mechanisms, an attempt that
builds exactly what that stage and the earlier ones build passes the stage's check.

The partial attempts are tests/partial_attempts.py's (the `partial_attempt` fixture): a
faithful candidate with what later stages build taken out, the single-function
mechanisms included (a function that refuses the inputs a later stage teaches it).

Cost: one grader run per stage (41), 1-8 s each at load 7 on the shared 2-core machine,
about 100 s in all: the slowest file of the suite (`-m "not slow"` leaves it out).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from gptlab_practice.grader import attempt_filename, identity, run_stage
from gptlab_practice.stages import mechanisms

pytestmark = [pytest.mark.extension, pytest.mark.owner("practice"), pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[3]


STAGES = [(name, s.number) for name, m in mechanisms().items() for s in m.stages]


@pytest.mark.parametrize(("name", "stage"), STAGES, ids=[f"{n}-{s}" for n, s in STAGES])
def test_a_partial_attempt_passes_its_stage(
    name: str, stage: int, tmp_path: Path, partial_attempt: Callable[[str, int], str]
) -> None:
    mechanism = mechanisms()[name]
    attempt = tmp_path / attempt_filename(name)
    attempt.write_text(partial_attempt(name, stage))
    run = run_stage(ROOT, mechanism, stage, attempt)
    assert not run.problem, run.problem
    selected = [r for r in run.results if mechanism.selects(stage, identity(r))]
    failed = [f"{r.nodeid}: {r.reason}" for r in selected if r.outcome == "failed"]
    assert selected and not failed, "\n".join(failed[:12])
