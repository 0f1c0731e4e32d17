"""How long a stage check takes: every tinygpt stage, and the largest stage of the others.

    python packages/practice/bench/stage_checks.py [--repeat 3] [--only tinygpt]

Each figure is the wall time of the grader run a `check` makes (one pytest process
with one xdist worker, the stage's tests only) on a faithful candidate that passes
it, best of `--repeat`; the CLI's own start-up (importing the grader) is measured
apart. Prints a markdown table (packages/practice/README.md keeps the last one).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

from gptlab_practice.grader import run_stage
from gptlab_practice.stages import mechanisms

ROOT = Path(__file__).resolve().parents[3]
FAITHFUL = ROOT / "integration_tests" / "faithful"
CANDIDATES = {
    "tinygpt": "good_tinygpt_manual_softmax.py",
    "cache_aware_lm": "good_cache_aware_lm_manual_softmax.py",
    "kv_cache": "good_kv_cache_index_copy.py",
    "prefix_cache": "good_prefix_cache_dict_recency.py",
    "chunked_prefill": "good_chunked_prefill_balanced.py",
    "speculative": "good_speculative_gptfast.py",
    "paged_kv": "good_paged_kv_tuple_chain.py",
    "scheduler": "good_scheduler_flat_slots.py",
}


def children_cpu_s() -> float:
    """CPU seconds (user + system) of every finished child process so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def startup_s(repeat: int) -> float:
    """The CLI's start before the grader runs: Python, the grader's imports (torch)."""
    code = "import gptlab_practice.cli, gptlab_practice.grader"
    walls = []
    for _ in range(repeat):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True)
        walls.append(time.perf_counter() - started)
    return min(walls)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", nargs="*", default=list(CANDIDATES))
    parser.add_argument("--stages", choices=("all", "last"), default="all", help="tinygpt's")
    options = parser.parse_args()
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at start")
    print(f"CLI start-up (import the grader): {startup_s(options.repeat):.2f} s\n")
    print("| mechanism | stage | tests | wall, best (s) | wall, median (s) | CPU per run (s) |")
    print("|---|---:|---:|---:|---:|---:|")
    for name in options.only:
        mechanism = mechanisms()[name]
        numbers = [s.number for s in mechanism.stages]
        every = name == "tinygpt" and options.stages == "all"
        for number in numbers if every else numbers[-1:]:
            cpu = children_cpu_s()
            runs = [
                run_stage(ROOT, mechanism, number, FAITHFUL / CANDIDATES[name])
                for _ in range(options.repeat)
            ]
            cpu = (children_cpu_s() - cpu) / options.repeat
            failed = [r.nodeid for run in runs for r in run.results if r.outcome == "failed"]
            assert not failed and not runs[0].problem, (name, number, failed, runs[0].problem)
            walls = [run.wall_s for run in runs]
            print(
                f"| {name} | {number} | {len(runs[0].results)} | {min(walls):.1f} |"
                f" {statistics.median(walls):.1f} | {cpu:.1f} |",
                flush=True,
            )
    print(f"\nload average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
