"""How long a learner waits: a whole `check` command (start-up included), first in a new
home and later in the same one, for a mechanism stage and a drill; and `watch`'s save to
verdict (warm). Prints a markdown table (packages/practice/README.md keeps the last one).

    python packages/practice/bench/check_times.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import io
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
FAITHFUL = ROOT / "integration_tests" / "faithful"
sys.path.insert(0, str(ROOT / "packages" / "practice" / "tests"))
from conftest import pasted  # noqa: E402  (the tests' faithful attempts)

P19 = pasted("P19")

CASES = {  # item: (attempt file, code pasted under the header)
    "kv_cache": ("kv_cache_attempt.py", (FAITHFUL / "good_kv_cache_index_copy.py").read_text()),
    "tinygpt": ("tiny_gpt_attempt.py", (FAITHFUL / "good_tinygpt_manual_softmax.py").read_text()),
    "P19": ("p19_attempt.py", P19),
}


def cli(home: Path, *argv: str) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "gptlab_practice", "--home", str(home), "--root", str(ROOT), *argv],
        capture_output=True,
        text=True,
        check=False,
    )
    return time.perf_counter() - started, done.stdout + done.stderr


def check_walls(item: str, repeat: int) -> tuple[list[float], list[float], list[float]]:
    """(first check in a new home, a later check in it, the grader's part of the later)."""
    firsts, laters, graders = [], [], []
    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as scratch:
            home = Path(scratch) / "practice"
            cli(home, "start", item)
            name, code = CASES[item]
            attempt = home / name
            attempt.write_text(attempt.read_text() + code)
            first, out = cli(home, "check")
            assert "PASS" in out, out
            cli(home, "start", item, "--new")
            attempt.write_text(attempt.read_text() + code)
            later, out = cli(home, "check")
            assert "PASS" in out, out
            firsts.append(first)
            laters.append(later)
            graders.append(float(re.search(r"graded in ([\d.]+) s", out).group(1)))  # type: ignore[union-attr]
    return firsts, laters, graders


def watch_latency(repeat: int) -> list[float]:
    """Save to verdict under `watch` (P19, warm: the watcher imported torch at its start)."""
    from rich.console import Console

    from gptlab_practice.cli import Practice
    from gptlab_practice.watch import Screen, watch

    with tempfile.TemporaryDirectory() as scratch:
        home = Path(scratch) / "practice"
        practice = Practice(home, ROOT, lambda: datetime.now().astimezone(), lambda _: None)
        practice.start("P19", new=False)
        attempt = home / "p19_attempt.py"
        header = attempt.read_text()
        stop, ready, checked = threading.Event(), threading.Event(), threading.Semaphore(0)
        latencies: list[float] = []

        def on_check(screen: Screen) -> None:
            latencies.append(screen.last_latency_s or 0.0)
            checked.release()

        def learner() -> None:
            try:
                ready.wait(60)
                for _ in range(repeat):  # a failing save each time keeps the attempt active
                    attempt.write_text(header + "def decode_attention(q, k, v, n):\n    return q\n")
                    checked.acquire(timeout=120)
            finally:
                stop.set()

        writer = threading.Thread(target=learner)
        writer.start()
        watch(
            practice,
            "P19",
            console=Console(file=io.StringIO()),
            stop=stop,
            ready=ready,
            on_check=on_check,
        )
        writer.join()
        practice.close()
    return latencies


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    options = parser.parse_args()
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at start\n")
    print("| what | first check, new home (s) | later check (s) | its grader run (s) |")
    print("|---|---:|---:|---:|")
    for item in CASES:
        firsts, laters, graders = check_walls(item, options.repeat)
        print(
            f"| `check` {item} stage 1 | {min(firsts):.1f} (median {statistics.median(firsts):.1f})"
            f" | {min(laters):.1f} (median {statistics.median(laters):.1f})"
            f" | {statistics.median(graders):.1f} |",
            flush=True,
        )
    saves = watch_latency(options.repeat)
    best, median = min(saves), statistics.median(saves)
    print(f"| `watch` P19 save to verdict | - | {best:.1f} (median {median:.1f}) | - |")
    print(f"\nload average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
