"""Same candidate, same verdict: grading a drill attempt five times gives five equal records.

The drills' suites use hypothesis; under the grader its examples are derandomized (the
`gptlab` plugin's profile), so no verdict depends on a random draw. Each run below is
graded as `grade` grades it (contract tests, forked test processes, time and memory
limits). The runs fork from a fresh interpreter, not from this pytest process: this one
has imported the drills' test modules with the references bound, and a fork would reuse
them.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

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

GRADE_TIMES = """
import json, sys
from gptlab_testkit.running.suites import ForkedRun, grading_args, warm_up

suite, variable, candidate, runs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
warm_up()
args = ["-m", "contract", "-q", *grading_args(60.0, 4096, workers=1)]
cards = []
for _ in range(runs):
    run = ForkedRun([suite], {variable: candidate}, args, limit=120).wait()
    if run.problem:
        sys.exit(run.output[-2000:])
    cards.append(sorted((r.nodeid, r.outcome) for r in run.results))
print(json.dumps(cards))
"""


def scorecards(drill: str, variable: str, candidate: Path) -> list[list[list[str]]]:
    suite = str(PACKAGE / "tests" / drill)
    command = [sys.executable, "-c", GRADE_TIMES, suite, variable, str(candidate), str(RUNS)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("drill", sorted(CANDIDATES))
def test_grading_the_same_attempt_five_times_gives_five_equal_scorecards(drill):
    variable, relative = CANDIDATES[drill]

    cards = scorecards(drill, variable, PACKAGE / relative)

    assert len(cards) == RUNS
    assert any(outcome == "failed" for _, outcome in cards[0]), "the candidate must fail a test"
    assert all(card == cards[0] for card in cards), f"{drill}: verdicts differ between runs"
