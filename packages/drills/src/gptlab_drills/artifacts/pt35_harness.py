"""The supplied PT35 profiler harness: before (the start loop) vs after (your repair).

    python -m gptlab_drills.artifacts.pt35_harness my_pt35.py              # vs pt35_start.py
    python -m gptlab_drills.artifacts.pt35_harness my_pt35.py --steps 128  # a longer decode
    python -m gptlab_drills.artifacts.pt35_harness gptlab_drills.pt35      # the project's repair

torch.profiler runs each loop on a schedule: `wait` iterations ignored, `warmup` iterations
traced and thrown away (first-call costs, and compilation if you compile your loop, land
there), then `active` iterations recorded. Over the active window it reports, per loop:
self CPU time per operator, the bytes allocated inside operators (profile_memory=True: each
operator's positive net allocation, summed), the calls of the operators a hidden-allocation
hunt looks for (cat, contiguous, clone, item), how many distinct input shapes each had (a
cache copied every step has a new one every step). Then it times further iterations with the tracer
off, warm-up done: a latency distribution (printed, never a verdict; load moves it).

It also checks what the repair promises: your outputs equal the start loop's, and your
caches' data pointers never move. Your caches are allocated once, before profiling: a
fixed-capacity cache costs nothing per iteration.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import torch
from torch.profiler import ProfilerActivity, profile, schedule

HUNTED = ("aten::cat", "aten::contiguous", "aten::clone", "aten::item")


@dataclass
class Report:
    """One loop's active window."""

    op_seconds: dict[str, float]  # self CPU time per operator, all active iterations
    op_calls: dict[str, int]
    allocated_bytes: int
    distinct_shapes: dict[str, int]  # per operator: how many input-shape signatures
    latencies: list[float]  # seconds, one per timed (untraced) iteration

    def calls(self, op: str) -> int:
        return self.op_calls.get(op, 0)

    def op_time(self, op: str | None = None) -> float:
        """Self CPU seconds of one operator, or of all of them (the step markers left out)."""
        if op is not None:
            return self.op_seconds.get(op, 0.0)
        return sum(t for key, t in self.op_seconds.items() if not key.startswith("ProfilerStep"))

    def latency(self) -> dict[str, float]:
        ordered = sorted(self.latencies)
        return {
            "p50": statistics.median(ordered),
            "p90": ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))],
            "max": ordered[-1],
        }


def profile_loop(
    run: Callable[[], object], *, wait: int = 1, warmup: int = 1, active: int = 3, timed: int = 10
) -> Report:
    """Profile `run()` over a scheduled window (only the `active` iterations count), then
    time `timed` more iterations untraced: the tracer's own cost would swamp small ops."""
    plan = schedule(wait=wait, warmup=warmup, active=active, repeat=1)
    with profile(
        activities=[ProfilerActivity.CPU], schedule=plan, profile_memory=True, record_shapes=True
    ) as profiler:
        for _ in range(wait + warmup + active):
            run()
            profiler.step()
    latencies = []
    for _ in range(timed):  # warm already: the profiled iterations ran first
        start = time.perf_counter()
        run()
        latencies.append(time.perf_counter() - start)
    return _report(profiler, latencies)


def _report(profiler: Any, latencies: list[float]) -> Report:
    seconds: dict[str, float] = {}
    calls: dict[str, int] = {}
    allocated = 0
    for average in profiler.key_averages():
        seconds[average.key] = average.self_cpu_time_total / 1e6
        calls[average.key] = average.count
        allocated += max(0, average.self_cpu_memory_usage)
    shapes: dict[str, int] = {}
    for average in profiler.key_averages(group_by_input_shape=True):
        shapes[average.key] = shapes.get(average.key, 0) + 1
    return Report(seconds, calls, allocated, shapes, latencies)


def random_inputs(batch: int, steps: int, heads: int, head_dim: int) -> list[torch.Tensor]:
    generator = torch.Generator().manual_seed(0)
    return [torch.randn(batch, steps, heads, head_dim, generator=generator) for _ in range(3)]


def compare(start: ModuleType, repaired: ModuleType, *, steps: int = 64) -> dict[str, Any]:
    """Profile start.decode_loop and repaired.fixed_cache_decode on the same decode."""
    queries, keys, values = random_inputs(batch=2, steps=steps, heads=4, head_dim=16)
    k_cache = torch.zeros(2, 4, steps, 16)  # allocated once: fixed capacity
    v_cache = torch.zeros_like(k_cache)
    pointers = {k_cache.data_ptr(), v_cache.data_ptr()}
    moved: list[bool] = []

    def after() -> object:
        out = repaired.fixed_cache_decode(queries, keys, values, k_cache, v_cache, 0)
        moved.append({k_cache.data_ptr(), v_cache.data_ptr()} != pointers)
        return out

    want = start.decode_loop(queries, keys, values)
    got = repaired.fixed_cache_decode(queries, keys, values, k_cache, v_cache, 0)
    return {
        "parity": got.shape == want.shape and torch.allclose(got, want, atol=1e-5, rtol=1e-5),
        "before": profile_loop(lambda: start.decode_loop(queries, keys, values)),
        "after": profile_loop(after),
        "stable_cache_pointer": not any(moved),
    }


def load(path: str | Path, name: str) -> ModuleType:
    """A file by its path, or an installed module by its dotted name."""
    if not str(path).endswith(".py"):
        return importlib.import_module(str(path))
    spec = importlib.util.spec_from_file_location(name, str(path))
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # a dataclass looks its module up while it is built
    spec.loader.exec_module(module)
    return module


def render(result: dict[str, Any]) -> str:
    before, after = result["before"], result["after"]
    lines = [f"{'':24}{'before':>14}{'after':>14}"]
    lines.append(f"{'allocated bytes':24}{before.allocated_bytes:>14}{after.allocated_bytes:>14}")
    total = f"{before.op_time() * 1e3:>12.3f}ms{after.op_time() * 1e3:>12.3f}ms"
    lines.append(f"{'op time (self CPU)':24}{total}")
    for op in HUNTED:
        lines.append(f"{op + ' calls':24}{before.calls(op):>14}{after.calls(op):>14}")
        spent = f"{before.op_time(op) * 1e3:>12.3f}ms{after.op_time(op) * 1e3:>12.3f}ms"
        lines.append(f"{'  op time':24}{spent}")
        shapes = f"{before.distinct_shapes.get(op, 0)} / {after.distinct_shapes.get(op, 0)}"
        lines.append(f"{'  distinct shapes':24}{shapes:>28}")
    for key in ("p50", "p90", "max"):
        ms = f"{before.latency()[key] * 1e3:>12.3f}ms{after.latency()[key] * 1e3:>12.3f}ms"
        lines.append(f"{'latency ' + key:24}{ms}")
    lines.append(f"outputs equal the start loop's: {result['parity']}")
    lines.append(f"cache data pointers stable:     {result['stable_cache_pointer']}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("repaired", help="your file (or a module name) defining fixed_cache_decode")
    parser.add_argument("--start", default=str(Path(__file__).with_name("pt35_start.py")))
    parser.add_argument("--steps", type=int, default=64)
    args = parser.parse_args(argv)
    repaired = load(args.repaired, "pt35_repaired")
    if not hasattr(repaired, "fixed_cache_decode"):
        print(f"{args.repaired} defines no fixed_cache_decode yet: nothing to compare")
        return 1
    print(render(compare(load(args.start, "pt35_start"), repaired, steps=args.steps)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
