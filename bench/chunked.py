"""4. Chunked prefill: total time and peak activation memory against chunk size.

Two peaks, both "bytes allocated above what was live before":
- whole call: everything ``chunked_prefill`` allocates, including the ``[T, V]``
  logits the contract returns (concatenated at the end, so held twice briefly);
- largest chunk call: the peak inside one model call (activations, the mask, that
  chunk's logits and its newly built full-length cache) above what was live when
  that call started. This is what the chunk size bounds.
Method: on CPU, ``torch.profiler.profile(profile_memory=True)`` records each
allocation and free of torch's CPU allocator on the op that made it; summing the
events' ``self_cpu_memory_usage`` in start-time order gives live bytes over time,
and each model call is a ``record_function`` range. On CUDA,
``torch.cuda.max_memory_allocated`` around the whole call and around each model
call. Times come from separate, unprofiled runs.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch.profiler import ProfilerActivity, profile, record_function

import chunked_prefill

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
)

MARK = "bench.model_call"


class MarkedModel:
    """Forwards to the model, marking each call; on CUDA also records each call's peak."""

    def __init__(self, model: Any, settings: Settings) -> None:
        self.model = model
        self.settings = settings
        self.cuda_calls: list[tuple[int, int]] = []  # (bytes live at the start, absolute peak)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        device = self.settings.device
        before = 0
        if device.type == "cuda":
            torch.cuda.synchronize(device)
            before = torch.cuda.memory_allocated(device)
            torch.cuda.reset_peak_memory_stats(device)
        with record_function(MARK):
            out = self.model(*args, **kwargs)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
            self.cuda_calls.append((before, torch.cuda.max_memory_allocated(device)))
        return out


def peak_bytes(settings: Settings, marked: MarkedModel, call: Callable[[], Any]) -> tuple[int, int]:
    """(peak of the whole call, largest peak inside one marked model call), in bytes."""
    device = settings.device
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        before = torch.cuda.memory_allocated(device)
        torch.cuda.reset_peak_memory_stats(device)
        marked.cuda_calls.clear()
        call()
        torch.cuda.synchronize(device)
        # Each model call resets the peak counter: the whole call's absolute peak is the
        # largest of the calls' peaks and what followed the last call.
        peaks = [peak for _, peak in marked.cuda_calls]
        whole = max([torch.cuda.max_memory_allocated(device), *peaks]) - before
        per_call = max((peak - start for start, peak in marked.cuda_calls), default=0)
        return int(whole), int(per_call)
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as profiler:
        call()
    events = sorted(profiler.events(), key=lambda event: event.time_range.start)
    ranges = [(e.time_range.start, e.time_range.end) for e in events if e.name == MARK]
    live = whole = 0
    bases: list[int | None] = [None] * len(ranges)
    call_peaks = [0] * len(ranges)
    for event in events:
        start = event.time_range.start
        for index, (begin, _) in enumerate(ranges):
            if bases[index] is None and start >= begin:
                bases[index] = live  # live bytes when the model call began
        live += event.self_cpu_memory_usage
        whole = max(whole, live)
        for index, (begin, end) in enumerate(ranges):
            base = bases[index]
            if base is not None and begin <= start <= end:
                call_peaks[index] = max(call_peaks[index], live - base)
    return whole, max(call_peaks, default=0)


def run(settings: Settings, progress: Progress) -> Section:
    length = 256 if settings.quick else 1024
    chunks = [32, 128, 256] if settings.quick else [16, 32, 64, 128, 256, 512, 1024]
    model = build_modern(modern_config(length + 8), settings)
    ids = random_ids(1, length, model.geometry.vocab_size, settings, seed=7)
    positions = positions_from([0], length, settings)

    marked = MarkedModel(model, settings)

    def prefill(chunk: int, runner: Any) -> Callable[[], Any]:
        def call() -> Any:
            with torch.inference_mode():
                return chunked_prefill.chunked_prefill(runner, ids, positions, chunk)

        return call

    times: dict[int, float] = {}
    memory: dict[int, int] = {}
    call_memory: dict[int, int] = {}
    for chunk in chunks:
        progress.step(f"chunk size {chunk} ({-(-length // chunk)} calls)")
        call = prefill(chunk, model)
        call()  # warm-up
        times[chunk] = statistics.median(timed(settings, call)[0] for _ in range(settings.repeats))
        memory[chunk], call_memory[chunk] = peak_bytes(settings, marked, prefill(chunk, marked))

    section = Section("4. Chunked prefill: time and peak activation memory against chunk size")
    full = max(chunks)
    method = (
        "torch.cuda.max_memory_allocated"
        if settings.device.type == "cuda"
        else "torch.profiler allocator events (profile_memory=True), summed in time order"
    )
    logits_mib = length * model.geometry.vocab_size * 4 / 2**20
    section.body += [
        f"Prompt {length} tokens, modern variant, batch 1; peaks are bytes allocated above "
        f"what was live before ({method}), for the whole call and for the largest single "
        "model call. Ratios against one call of the whole prompt (the largest chunk). The "
        f"whole-call peak is dominated by the returned [T, V] logits ({logits_mib:.0f} MiB, "
        "held twice while the chunks' logits are concatenated), which no chunk size changes.",
        "",
        "| chunk size | calls | time ms | time vs one call | whole-call peak MiB | "
        "largest chunk-call peak MiB | chunk-call peak vs one call |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for chunk in chunks:
        section.body.append(
            f"| {chunk} | {-(-length // chunk)} | {1e3 * times[chunk]:.1f} | "
            f"{times[chunk] / times[full]:.2f}x | {memory[chunk] / 2**20:.1f} | "
            f"{call_memory[chunk] / 2**20:.1f} | {call_memory[chunk] / call_memory[full]:.2f}x |"
        )
    section.body.append("")
    figure = "chunked_prefill.png"
    _plot(chunks, times, memory, call_memory, settings.out_dir / figure)
    section.figures.append(figure)
    return section


def _plot(
    chunks: list[int],
    times: dict[int, float],
    memory: dict[int, int],
    call_memory: dict[int, int],
    path: Path,
) -> None:
    figure, (left, right) = new_figure(1, 2, size=(9.6, 4.0))
    left.plot(chunks, [1e3 * times[c] for c in chunks], marker="o")
    left.set_ylabel("total prefill time (ms)")
    right.plot(chunks, [memory[c] / 2**20 for c in chunks], marker="o", label="whole call")
    right.plot(
        chunks, [call_memory[c] / 2**20 for c in chunks], marker="s", label="largest chunk call"
    )
    right.set_ylabel("peak allocated (MiB)")
    right.legend()
    for axis in (left, right):
        axis.set_xscale("log", base=2)
        axis.set_xlabel("chunk size (tokens)")
        axis.grid(True, which="both", alpha=0.3)
    figure.suptitle("Chunked prefill")
    save_figure(figure, path)
