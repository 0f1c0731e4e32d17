"""Each drill's contract suite, warm, as `grade` runs one drill attempt.

    .nox/drills/bin/python -m bench.drill_suites      # from the repository root

One process imports torch, pytest and the references once (`warm_up`); each drill's
suite then runs in a process forked from it, under grade's protections (one forked
test process, per-test limit, memory limit), after what grade imports for a swapped
drill (`preload`). Prints one JSON object {id: seconds}.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from gptlab_testkit.candidates import VARIABLES
from gptlab_testkit.running.suites import ForkedRun, grading_args, preload, warm_up

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    warm_up()
    # What grade imports before forking when a drill is swapped in (torch._dynamo for P27).
    preload([name for name, variable in VARIABLES.items() if variable.is_drill])
    seconds: dict[str, float] = {}
    for variable in VARIABLES.values():
        if not variable.is_drill:
            continue
        args = ["-m", "contract", "-q", *grading_args(60.0, 4096, 1)]
        run = ForkedRun([str(ROOT / variable.suite)], {}, args).wait()
        if run.returncode != 0:
            print(f"{variable.package}: exit {run.returncode} {run.problem}", file=sys.stderr)
            return 1
        seconds[variable.package] = round(run.seconds, 2)
    print(json.dumps(seconds))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
