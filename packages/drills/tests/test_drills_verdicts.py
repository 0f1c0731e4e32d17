"""Same candidate, same verdict: grading a drill attempt five times gives five equal records.

The drills' suites use hypothesis; under the grader its examples are derandomized (the
`gptlab` plugin's profile), so no verdict depends on a random draw. Each run below is
graded as `grade` grades it (contract tests, forked test processes, time and memory
limits), from a process forked from this one.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gptlab_testkit.suites import ForkedRun, grading_args

pytestmark = [pytest.mark.owner("grading"), pytest.mark.extension]

PACKAGE = Path(__file__).parents[1]
RUNS = 5
# Suites whose verdicts hypothesis examples help decide, each with a candidate that fails
# some of them (a faithful stranger passes all: its records would be trivially equal).
CANDIDATES = {
    "p25": ("DRILL_P25_MODULE", "known_bad/bad_p25_stranger_no_capacity.py"),
    "p10": ("DRILL_P10_MODULE", "known_bad/bad_p10_stranger_crossing_token_dropped.py"),
    "p05": ("DRILL_P05_MODULE", "known_bad/bad_p05_upper_left_triangle.py"),
}


def scorecard(drill: str, variable: str, candidate: Path) -> list[tuple[str, str]]:
    args = ["-m", "contract", "-q", *grading_args(60.0, 4096, workers=1)]
    run = ForkedRun(
        [str(PACKAGE / "tests" / drill)], {variable: str(candidate)}, args, limit=120
    ).wait()
    assert not run.problem, run.output[-2000:]
    return sorted((result.nodeid, result.outcome) for result in run.results)


@pytest.mark.parametrize("drill", sorted(CANDIDATES))
def test_grading_the_same_attempt_five_times_gives_five_equal_scorecards(drill):
    variable, relative = CANDIDATES[drill]
    candidate = PACKAGE / relative

    cards = [scorecard(drill, variable, candidate) for _ in range(RUNS)]

    assert any(outcome == "failed" for _, outcome in cards[0]), "the candidate must fail a test"
    assert all(card == cards[0] for card in cards), f"{drill}: verdicts differ between runs"
