"""5. Speculative decoding against the number of speculative tokens k.

Target: the modern benchmark model. Drafts: the target itself (identical: every
proposal is accepted, so this isolates the mechanism's overhead) and a
layer-skipping draft (the target's first block, embedding, final norm and head).
Wall time is compared with the target's own greedy ``generate`` (functional
cache) timed in the same rounds. Target calls per emitted token count the prompt
prefill plus one verification call per round.
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

import torch

import speculative

from .common import (
    Progress,
    Section,
    Settings,
    build_modern,
    modern_config,
    new_figure,
    positions_from,
    random_ids,
    save_figure,
    timed,
    truncated_modern,
)

PROMPT = 16


def run(settings: Settings, progress: Progress) -> Section:
    new_tokens = 24 if settings.quick else 128
    ks = [1, 4] if settings.quick else [1, 2, 4, 8]
    target = build_modern(modern_config(PROMPT + new_tokens + 16), settings)
    drafts = {
        "identical draft (4 layers)": target,
        "layer-skipping draft (1 of 4 layers)": truncated_modern(target, 1, settings),
    }
    ids = random_ids(1, PROMPT, target.geometry.vocab_size, settings, seed=5)
    positions = positions_from([0], PROMPT, settings)

    def plain() -> Any:
        return target.generate(ids, positions, new_tokens)

    plain()
    expected = plain()
    results: dict[str, dict[int, dict[str, float]]] = {}
    lossless = True
    for draft_name, draft in drafts.items():
        results[draft_name] = {}
        for k in ks:
            progress.step(f"{draft_name}, k = {k}")

            def spec(draft: Any = draft, k: int = k) -> Any:
                return speculative.speculative_generate(
                    target, draft, ids, positions, new_tokens, k
                )

            spec()  # warm-up
            spec_times, plain_times = [], []
            out: Any = None
            for _ in range(settings.repeats):
                seconds, out = timed(settings, spec)
                spec_times.append(seconds)
                plain_times.append(timed(settings, plain)[0])
            lossless = lossless and bool(torch.equal(out.tokens, expected))
            emitted = out.tokens.shape[1] - PROMPT
            spec_seconds = statistics.median(spec_times)
            results[draft_name][k] = {
                "acceptance": float(out.acceptance_rate),
                "calls_per_token": (1 + out.verification_steps) / emitted,
                "seconds": spec_seconds,
                "vs_plain": spec_seconds / statistics.median(plain_times),
            }

    section = Section("5. Speculative decoding against the number of speculative tokens")
    section.body += [
        f"Batch 1, {new_tokens} new tokens, greedy; plain greedy generate makes 1.00 target "
        "call per token (one prefill, then one call per token). Output equals the "
        f"target's own greedy tokens in every run: {'yes' if lossless else 'NO'}.",
        "",
        "| draft | k | acceptance rate | target calls / token | wall ms | wall vs plain |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for draft_name, by_k in results.items():
        for k, row in by_k.items():
            section.body.append(
                f"| {draft_name} | {k} | {row['acceptance']:.2f} | "
                f"{row['calls_per_token']:.2f} | {1e3 * row['seconds']:.0f} | "
                f"{row['vs_plain']:.2f}x |"
            )
    small = drafts["layer-skipping draft (1 of 4 layers)"]
    small_seconds = statistics.median(
        timed(settings, lambda: small.generate(ids, positions, new_tokens))[0]
        for _ in range(settings.repeats)
    )
    plain_seconds = statistics.median(timed(settings, plain)[0] for _ in range(settings.repeats))
    best_draft, best_k = min(
        ((name, k) for name, by_k in results.items() for k in by_k),
        key=lambda pair: results[pair[0]][pair[1]]["vs_plain"],
    )
    best = results[best_draft][best_k]
    section.body += [
        "",
        f"Best wall time: {best_draft}, k = {best_k}, {best['vs_plain']:.2f}x plain generate "
        f"at acceptance {best['acceptance']:.2f}. Speculation trades target calls for draft "
        "calls, so it pays in wall time only when a draft step is much cheaper than a target "
        f"step: here the layer-skipping draft's own greedy decoding takes "
        f"{small_seconds / plain_seconds:.2f}x the target's time per token (per-call dispatch "
        "costs it shares with the target do not shrink with its depth), and every round adds "
        "a k-token verification call and cache rollbacks.",
        "",
    ]
    figure = "speculative.png"
    _plot(ks, results, settings.out_dir / figure)
    section.figures.append(figure)
    return section


def _plot(ks: list[int], results: dict[str, dict[int, dict[str, float]]], path: Path) -> None:
    figure, axes = new_figure(1, 3, size=(12.0, 3.8))
    panels = (
        ("acceptance", "acceptance rate"),
        ("calls_per_token", "target calls per emitted token"),
        ("vs_plain", "wall time / plain generate"),
    )
    for axis, (key, label) in zip(axes, panels, strict=True):
        for draft_name, by_k in results.items():
            axis.plot(ks, [by_k[k][key] for k in ks], marker="o", label=draft_name)
        axis.set_xscale("log", base=2)
        axis.set_xlabel("speculative tokens k")
        axis.set_ylabel(label)
        axis.grid(True, which="both", alpha=0.3)
    axes[0].legend(fontsize=8)
    figure.suptitle("Speculative decoding")
    save_figure(figure, path)
