"""3. Prefix cache: prefill time against the shared-prefix fraction.

Per fraction f, a fresh PrefixCache first serves a warm request (untimed) whose
first ``f * P`` tokens the measured request shares; then the measured request's
``PrefixCachedRunner.prefill`` (lookup, suffix forward, publishing its own
snapshots) is timed against one full uncached forward of the same prompt. A
decomposition times lookup + suffix forward alone, which shows what the
snapshot publishing costs.
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

import prefix_cache

from .common import (
    Progress,
    Section,
    Settings,
    TargetCheck,
    build_modern,
    modern_config,
    new_figure,
    positions_from,
    save_figure,
    timed,
)

NAMESPACE = prefix_cache.PrefixCacheNamespace("bench-modern", "seed-1234")


def _prompts(length: int, shared: int, vocab: int, settings: Settings) -> tuple[Tensor, Tensor]:
    """A warm prompt and a request that shares exactly its first ``shared`` tokens."""
    generator = torch.Generator().manual_seed(length + shared)
    warm = torch.randint(0, vocab, (1, length), generator=generator)
    request = torch.randint(0, vocab, (1, length), generator=generator)
    request[:, :shared] = warm[:, :shared]
    if shared < length:  # make the first differing token really differ
        request[0, shared] = (warm[0, shared] + 1) % vocab
    return warm.to(settings.device), request.to(settings.device)


def _suffix_only(model: Any, cache: Any, request: Tensor, positions: Tensor, cap: int) -> None:
    """Lookup plus the suffix forward: the runner's compute without publishing snapshots."""
    match = cache.lookup_longest(NAMESPACE, request, max_length=cap)
    reused = 0 if match is None else match.prefix_length
    with torch.inference_mode():
        if match is None:
            model(request, positions, use_cache=True)
            return
        device = request.device
        model(
            request[:, reused:],
            positions[:, reused:],
            past_key_values=match.past_key_values,
            cache_lengths=torch.tensor([reused], device=device),
            cache_start_positions=torch.tensor([0], device=device),
            use_cache=True,
        )


def _one_round(
    model: Any,
    block: int,
    warm: Tensor,
    request: Tensor,
    positions: Tensor,
    cap: int,
    settings: Settings,
) -> tuple[dict[str, float], dict[str, Any]]:
    """A fresh cache serves ``warm``, then ``request`` is timed three ways."""
    cache = prefix_cache.PrefixCache(block, max_entries=4096)
    runner = prefix_cache.PrefixCachedRunner(model, cache, NAMESPACE)
    with torch.inference_mode():
        runner.prefill(warm, positions)
        suffix_seconds, _ = timed(
            settings, lambda: _suffix_only(model, cache, request, positions, cap)
        )
        runner_seconds, out = timed(settings, lambda: runner.prefill(request, positions))
        full_seconds, _ = timed(settings, lambda: model(request, positions, use_cache=True))
    stats = getattr(cache, "stats", None)
    facts = {
        "reused": out.reused_tokens,
        "hits": getattr(stats, "hits", "-"),
        "misses": getattr(stats, "misses", "-"),
        "entries": cache.entry_count,
        "bytes": getattr(cache, "kv_bytes", None),
    }
    return {"full": full_seconds, "runner": runner_seconds, "suffix": suffix_seconds}, facts


def run(settings: Settings, progress: Progress) -> Section:
    length = 128 if settings.quick else 512
    block = 16 if settings.quick else 32
    fractions = [0.0, 0.5, 0.9] if settings.quick else [0.0, 0.25, 0.5, 0.75, 0.9]
    model = build_modern(modern_config(length + 8), settings)
    vocab = model.geometry.vocab_size
    positions = positions_from([0], length, settings)
    cap = block * ((length - 1) // block)  # the runner's reuse cap

    rows = []
    for fraction in fractions:
        shared = round(fraction * length)
        progress.step(f"shared prefix {fraction:.0%} ({shared} of {length} tokens)")
        warm, request = _prompts(length, shared, vocab, settings)
        samples: dict[str, list[float]] = {"full": [], "runner": [], "suffix": []}
        facts: dict[str, Any] = {}
        for round_index in range(settings.repeats + 1):  # round 0 warms up
            seconds, facts = _one_round(model, block, warm, request, positions, cap, settings)
            if round_index > 0:
                for name, value in seconds.items():
                    samples[name].append(value)
        medians = {name: statistics.median(values) for name, values in samples.items()}
        rows.append((fraction, shared, medians, facts))

    section = Section("3. Prefix cache: prefill time against shared-prefix fraction")
    section.body += _table(length, block, rows)
    figure = "prefix_cache_prefill.png"
    _plot(rows, settings.out_dir / figure)
    section.figures.append(figure)
    section.targets.append(_target(rows, length))
    return section


Row = tuple[float, int, dict[str, float], dict[str, Any]]


def _table(length: int, block: int, rows: list[Row]) -> list[str]:
    lines = [
        f"Prompt {length} tokens, block size {block}, modern variant, batch 1. Counters and "
        "bytes are the cache's after the warm request and the measured one (two prefills); "
        "bytes held include both prompts' snapshots (one entry per block boundary, each a "
        "full-prefix copy).",
        "",
        "| shared | reused | full prefill ms | runner prefill ms | speedup | "
        "lookup + suffix ms | speedup w/o publishing | hits | misses | entries | bytes held |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for fraction, _, medians, facts in rows:
        full, runner, suffix = medians["full"], medians["runner"], medians["suffix"]
        held = facts["bytes"]
        held_text = f"{held / 2**20:.1f} MiB" if isinstance(held, int) else "-"
        lines.append(
            f"| {fraction:.0%} | {facts['reused']} | {1e3 * full:.1f} | {1e3 * runner:.1f} | "
            f"{full / runner:.2f}x | {1e3 * suffix:.1f} | {full / suffix:.2f}x | "
            f"{facts['hits']} | {facts['misses']} | {facts['entries']} | {held_text} |"
        )
    lines.append("")
    return lines


def _plot(rows: list[Row], path: Path) -> None:
    fractions = [100 * row[0] for row in rows]
    figure, axis = new_figure(size=(6.4, 4.2))
    for key, label in (
        ("full", "full prefill (no prefix cache)"),
        ("runner", "PrefixCachedRunner.prefill"),
        ("suffix", "lookup + suffix forward only"),
    ):
        axis.plot(fractions, [1e3 * row[2][key] for row in rows], marker="o", label=label)
    axis.set_xlabel("shared prefix (% of prompt)")
    axis.set_ylabel("prefill time (ms)")
    axis.set_title("Prefix-cache prefill time")
    axis.grid(True, alpha=0.3)
    axis.legend()
    save_figure(figure, path)


def _target(rows: list[Row], length: int) -> TargetCheck:
    fraction, _, medians, facts = max(rows, key=lambda row: row[0])
    speedup = medians["full"] / medians["runner"]
    compute_only = medians["full"] / medians["suffix"]
    suffix = length - int(facts["reused"])
    ideal = length / suffix
    per_token_full = medians["full"] / length
    per_token_suffix = medians["suffix"] / suffix
    dearer = per_token_suffix / per_token_full
    extra = medians["runner"] / medians["suffix"] - 1
    publishing = f"adds {100 * extra:.0f}%" if extra > 0.03 else "costs nothing measurable"
    met = speedup >= 4.0
    return TargetCheck(
        f"prefix hit at {fraction:.0%} shared prefix cuts prefill",
        ">= 4x",
        f"{speedup:.2f}x (lookup + suffix alone {compute_only:.2f}x)",
        met,
        ""
        if met
        else f"block rounding leaves {suffix} of {length} tokens to compute (ideal "
        f"{ideal:.1f}x), and a {suffix}-token forward costs {dearer:.1f}x "
        f"more per token than the {length}-token one (small matmuls run below the large ones' "
        f"FLOP rate, plus fixed per-call cost); publishing snapshots {publishing}",
    )
