"""8. Continuous batching: the scheduler's engine against serving one request at a time.

64 requests (seeded) with prompts of 16-512 and outputs of 16-256 tokens, greedy, all
arriving at once, on the benchmark's Llama-shaped model (context 768). The same
requests are served two ways, alternating round by round:

- one at a time on the serving path (``cache_aware_lm.serve_generate`` over a
  request-sized ``kv_cache.KVCache``), first come first served;
- by ``scheduler.Engine`` over a block pool that holds every request at once: each
  step decodes every running request and fills the rest of the token budget with
  prompt chunks, in ONE model call over the padded mixed batch.

Reported: generated tokens/s of each (target: the engine >= 4x), time to first token
and time per output token (p50 / p99), batch occupancy per step over time (rows, real
and padded tokens), and where the engine's time goes (model call vs everything else,
padding share). Then the engine again under a pool sized for a quarter of the peak
demand (every request's blocks at once): every request must complete with the same
tokens as served alone; preemptions and recomputed tokens are counted.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Hashable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

import kv_cache
from cache_aware_lm import serve_generate
from scheduler import Engine

from .common import (
    Progress,
    Section,
    Settings,
    TargetCheck,
    build_modern,
    fmt_ratio,
    modern_config,
    new_figure,
    save_figure,
)

BLOCK = 16
GOAL = 4.0


@dataclass(frozen=True)
class Shape:
    """The workload and engine sizes of one run (full or ``--quick``)."""

    requests: int
    prompt: tuple[int, int]  # inclusive range of prompt lengths
    output: tuple[int, int]  # inclusive range of max_new_tokens
    context: int
    max_num_batched_tokens: int
    max_num_seqs: int


# A budget above a few whole prompts: under the padded layout every decode row of a mixed
# step is padded to the widest chunk, so fewer, larger prefill steps waste the least
# (measured on this workload: budget 1024 or 64 and max_num_seqs 16 were slower).
FULL = Shape(64, (16, 512), (16, 256), 768, 8192, 64)
QUICK = Shape(4, (8, 40), (4, 16), 64, 64, 4)

Workload = list[tuple[list[int], int]]  # (prompt ids, max_new_tokens) per request


def workload(shape: Shape, vocab: int, seed: int = 8) -> Workload:
    generator = torch.Generator().manual_seed(seed)

    def draw(low: int, high: int) -> int:
        return int(torch.randint(low, high + 1, (1,), generator=generator))

    requests = []
    for _ in range(shape.requests):
        prompt = torch.randint(0, vocab, (draw(*shape.prompt),), generator=generator).tolist()
        requests.append((prompt, draw(*shape.output)))
    return requests


def blocks_needed(prompt: Sequence[int], new_tokens: int) -> int:
    """Blocks one request holds at its largest: every token but the last sampled one."""
    return -(-(len(prompt) + new_tokens - 1) // BLOCK)


# ---- one at a time ----------------------------------------------------------------------------


@dataclass
class SerialRun:
    seconds: float
    outputs: list[list[int]]
    service_start: list[float]  # seconds after the run began: a lower bound of each TTFT
    service_seconds: list[float]


def one_at_a_time(model: Any, requests: Workload, settings: Settings) -> SerialRun:
    """Each request alone on the serving path, in arrival order."""
    g = model.geometry
    run = SerialRun(0.0, [], [], [])
    settings.sync()
    begin = time.perf_counter()
    for prompt, new_tokens in requests:
        started = time.perf_counter()
        storage = kv_cache.KVCache(
            g.n_layers, 1, g.n_kv_heads, len(prompt) + new_tokens, g.head_dim,
            device=settings.device,
        )  # fmt: skip
        ids = torch.tensor([prompt], dtype=torch.long, device=settings.device)
        positions = torch.arange(len(prompt), device=settings.device)[None]
        with torch.inference_mode():
            out = serve_generate(model, ids, positions, new_tokens, storage)
        run.outputs.append(out[0, len(prompt) :].tolist())  # a host read: synchronises
        run.service_start.append(started - begin)
        run.service_seconds.append(time.perf_counter() - started)
    run.seconds = time.perf_counter() - begin
    return run


# ---- the engine -------------------------------------------------------------------------------


@dataclass(frozen=True)
class StepSample:
    at: float  # seconds after the run began, when the step ended
    rows: int
    tokens: int  # scheduled (real) tokens
    padded: int  # rows x widest chunk: what the padded call computes
    decodes: int
    used_blocks: int
    preempted: int


@dataclass
class EngineRun:
    seconds: float
    outputs: list[list[int]]
    first_token: list[float]
    token_gaps: list[float]
    steps: list[StepSample] = field(default_factory=list)
    preemptions: int = 0
    model_seconds: float = 0.0
    prefill_tokens: int = 0


@contextmanager
def model_clock(model: torch.nn.Module, settings: Settings) -> Iterator[list[float]]:
    """Seconds spent inside the model, accumulated in ``total[0]``.

    A model call is a forward, or (the engine's in-place route through the serving
    seam) a ``run_blocks`` outside a forward; forward runs its own blocks through
    ``run_blocks``, so those are not counted twice.
    """
    total = [0.0]
    started = [0.0]
    inside_forward = [0]

    def before(module: object, args: object) -> None:
        settings.sync()
        started[0] = time.perf_counter()
        inside_forward[0] += 1

    def after(module: object, args: object, output: object) -> None:
        settings.sync()
        total[0] += time.perf_counter() - started[0]
        inside_forward[0] -= 1

    run_blocks = getattr(model, "run_blocks", None)

    def timed_run_blocks(*args: Any, **kwargs: Any) -> Any:
        assert run_blocks is not None
        if inside_forward[0]:
            return run_blocks(*args, **kwargs)
        settings.sync()
        begin = time.perf_counter()
        result = run_blocks(*args, **kwargs)
        settings.sync()
        total[0] += time.perf_counter() - begin
        return result

    hooks = [model.register_forward_pre_hook(before), model.register_forward_hook(after)]
    if run_blocks is not None:
        model.run_blocks = timed_run_blocks  # type: ignore[assignment]
    try:
        yield total
    finally:
        for hook in hooks:
            hook.remove()
        if run_blocks is not None:
            del model.run_blocks


def serve_with_engine(
    model: Any, requests: Workload, shape: Shape, num_blocks: int, settings: Settings
) -> EngineRun:
    """Every request added at once, stepped to completion; per-step and per-token times."""
    engine = Engine(
        model,
        context_length=shape.context,
        num_blocks=num_blocks,
        block_size=BLOCK,
        max_num_batched_tokens=shape.max_num_batched_tokens,
        max_num_seqs=shape.max_num_seqs,
    )
    for index, (prompt, new_tokens) in enumerate(requests):
        engine.add_request(index, prompt, new_tokens)
    order: dict[Hashable, int] = {index: index for index in range(len(requests))}
    outputs: list[list[int]] = [[] for _ in requests]
    last_token = [0.0] * len(requests)
    run = EngineRun(0.0, outputs, [0.0] * len(requests), [])
    with model_clock(model, settings) as model_seconds, torch.inference_mode():
        begin = time.perf_counter()
        while engine.has_unfinished_requests():
            record = engine.step()  # emitted ids are host ints: the step has synchronised
            now = time.perf_counter() - begin
            for request_id, token in record.emitted.items():
                index = order[request_id]
                if not outputs[index]:
                    run.first_token[index] = now
                else:
                    run.token_gaps.append(now - last_token[index])
                outputs[index].append(int(token))
                last_token[index] = now
            counts = [int(row.num_tokens) for row in record.scheduled]
            run.prefill_tokens += sum(
                int(row.num_tokens) for row in record.scheduled if row.kind == "prefill"
            )
            run.steps.append(
                StepSample(
                    now,
                    len(counts),
                    sum(counts),
                    len(counts) * max(counts, default=0),
                    sum(row.kind == "decode" for row in record.scheduled),
                    engine.stats.used_blocks,
                    len(record.preempted),
                )
            )
        run.seconds = time.perf_counter() - begin
    run.model_seconds = model_seconds[0]
    run.preemptions = engine.stats.preemptions
    return run


# ---- the section ------------------------------------------------------------------------------


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))]


def exact_count(outputs: list[list[int]], expected: list[list[int]]) -> int:
    return sum(got == want for got, want in zip(outputs, expected, strict=True))


def first_divergence(outputs: list[list[int]], expected: list[list[int]]) -> str:
    for index, (got, want) in enumerate(zip(outputs, expected, strict=True)):
        if got != want:
            at = next(
                (i for i, (a, b) in enumerate(zip(got, want, strict=False)) if a != b),
                min(len(got), len(want)),
            )
            return f"request {index} first differs at output token {at}"
    return ""


def run(settings: Settings, progress: Progress) -> Section:
    shape = QUICK if settings.quick else FULL
    model = build_modern(modern_config(shape.context), settings)
    requests = workload(shape, model.geometry.vocab_size)
    peak = sum(blocks_needed(prompt, n) for prompt, n in requests)
    generated = sum(n for _, n in requests)
    prompt_tokens = sum(len(prompt) for prompt, _ in requests)

    # One round per way in a full run: each takes minutes, longer than the machine's noise.
    rounds = settings.repeats if settings.quick else 1
    progress.step(f"warm-up, then {rounds} round(s): {shape.requests} requests each way")
    warm = [(prompt[:16], 4) for prompt, _ in requests[:2]]
    one_at_a_time(model, warm, settings)
    serve_with_engine(model, warm, shape, peak, settings)
    serial_runs: list[SerialRun] = []
    engine_runs: list[EngineRun] = []
    for round_index in range(rounds):
        serial_runs.append(one_at_a_time(model, requests, settings))
        engine_runs.append(serve_with_engine(model, requests, shape, peak, settings))
        progress.step(
            f"round {round_index + 1}: one at a time {serial_runs[-1].seconds:.1f}s, "
            f"engine {engine_runs[-1].seconds:.1f}s"
        )
    serial_seconds = statistics.median(r.seconds for r in serial_runs)
    engine_seconds = statistics.median(r.seconds for r in engine_runs)
    serial, engine = serial_runs[-1], engine_runs[-1]
    expected = serial.outputs

    quarter = max(-(-peak // 4), max(blocks_needed(p, n) for p, n in requests))
    progress.step(f"tight pool: {quarter} of {peak} blocks")
    tight = serve_with_engine(model, requests, shape, quarter, settings)

    speedup = serial_seconds / engine_seconds
    section = Section("8. Continuous batching (scheduler engine)")
    section.body += _workload_lines(shape, requests, peak, generated, prompt_tokens)
    section.body += _throughput_table(generated, serial_seconds, engine_seconds, rounds)
    section.body += _latency_table(serial, engine)
    section.body += _where_time_goes(engine, prompt_tokens)
    progress.step("one decode forward of the engine's shape, profiled")
    profile_lines, copy_share = _forward_profile(model, shape, requests)
    section.body += profile_lines
    section.body += _tight_lines(tight, quarter, peak, expected, prompt_tokens)
    figure = "scheduler_occupancy.png"
    _plot(engine, tight, quarter, shape, settings.out_dir / figure)
    section.figures.append(figure)
    section.targets += _targets(
        speedup, engine, tight, expected, (quarter, peak, prompt_tokens), copy_share
    )
    return section


def _workload_lines(
    shape: Shape, requests: Workload, peak: int, generated: int, prompt_tokens: int
) -> list[str]:
    lengths = [len(prompt) for prompt, _ in requests]
    news = [n for _, n in requests]
    return [
        f"{shape.requests} requests, all arriving at once (seeded): prompts {min(lengths)}-"
        f"{max(lengths)} tokens ({prompt_tokens} in all), outputs {min(news)}-{max(news)} "
        f"({generated} generated in all), greedy, no EOS. Model: the modern variant at context "
        f"{shape.context}. Engine: block size {BLOCK}, max_num_batched_tokens "
        f"{shape.max_num_batched_tokens}, max_num_seqs {shape.max_num_seqs}, pool of {peak} "
        "blocks (every request at its largest, at once: the peak demand).",
        "",
    ]


def _throughput_table(
    generated: int, serial_seconds: float, engine_seconds: float, rounds: int
) -> list[str]:
    return [
        f"Median of {rounds} round(s), the two ways alternating:",
        "",
        "| serving | wall s | generated tokens/s | vs one at a time |",
        "|---|---:|---:|---:|",
        f"| one at a time (`serve_generate`, `KVCache`) | {serial_seconds:.2f} | "
        f"{generated / serial_seconds:.0f} | 1.00x |",
        f"| `scheduler.Engine` (continuous batching) | {engine_seconds:.2f} | "
        f"{generated / engine_seconds:.0f} | {fmt_ratio(serial_seconds / engine_seconds)} |",
        "",
    ]


def _latency_table(serial: SerialRun, engine: EngineRun) -> list[str]:
    def ms(values: Sequence[float], q: float) -> str:
        return f"{1e3 * percentile(values, q):.0f}"

    per_token = [
        seconds / max(1, len(out))
        for seconds, out in zip(serial.service_seconds, serial.outputs, strict=True)
    ]
    return [
        "Latency, every request arriving at t = 0 (ms; last round):",
        "",
        "| serving | TTFT p50 | TTFT p99 | per output token p50 | p99 |",
        "|---|---:|---:|---:|---:|",
        f"| one at a time (TTFT >= wait for service; per token = service / tokens) | "
        f"{ms(serial.service_start, 50)} | {ms(serial.service_start, 99)} | "
        f"{ms(per_token, 50)} | {ms(per_token, 99)} |",
        f"| engine (measured per emitted token) | {ms(engine.first_token, 50)} | "
        f"{ms(engine.first_token, 99)} | {ms(engine.token_gaps, 50)} | "
        f"{ms(engine.token_gaps, 99)} |",
        "",
    ]


def _where_time_goes(engine: EngineRun, prompt_tokens: int) -> list[str]:
    real = sum(s.tokens for s in engine.steps)
    padded = sum(s.padded for s in engine.steps)
    mixed = [s for s in engine.steps if s.decodes and s.tokens > s.decodes]
    decode_only = [s for s in engine.steps if s.tokens == s.decodes]
    mean_rows = statistics.mean(s.rows for s in engine.steps)
    return [
        f"Where the engine's time goes (last round): {len(engine.steps)} steps, "
        f"{mean_rows:.1f} rows per step on average; the model call takes "
        f"{engine.model_seconds:.2f} s of {engine.seconds:.2f} s "
        f"({100 * engine.model_seconds / engine.seconds:.0f}%), the rest is scheduling, "
        f"gathering each row's K/V from the pool and appending the new K/V. The padded "
        f"layout computes {padded} token positions for {real} scheduled tokens "
        f"({100 * (padded - real) / max(padded, 1):.0f}% padding): {len(mixed)} steps mixed "
        f"prefill chunks with decodes (each decode row padded to the widest chunk), "
        f"{len(decode_only)} steps were decodes only. Prefill computed {engine.prefill_tokens} "
        f"tokens for {prompt_tokens} prompt tokens.",
        "",
    ]


def _forward_profile(model: Any, shape: Shape, requests: Workload) -> tuple[list[str], float]:
    """Where one engine-shaped decode forward spends its time: copies against compute."""
    g = model.geometry
    rows = min(shape.max_num_seqs, len(requests))
    lengths = torch.tensor([len(p) + n // 2 for p, n in requests[:rows]])
    longest = int(lengths.max())
    kv = [
        tuple(torch.randn(rows, g.n_kv_heads, longest, g.head_dim, device=model_device(model))
              for _ in range(2))
        for _ in range(g.n_layers)
    ]  # fmt: skip
    past = tuple((key, value) for key, value in kv)
    device = model_device(model)
    lengths = lengths.to(device)
    ids = torch.ones(rows, 1, dtype=torch.long, device=device)
    starts = torch.zeros(rows, dtype=torch.long, device=device)
    with torch.inference_mode():
        model(ids, lengths[:, None], past, lengths, starts, use_cache=True)  # warm-up
        with torch.profiler.profile() as profiler:
            model(ids, lengths[:, None], past, lengths, starts, use_cache=True)
    self_us: dict[str, float] = {}
    for event in profiler.key_averages():
        self_us[event.key] = self_us.get(event.key, 0.0) + event.self_cpu_time_total
    total = sum(self_us.values())
    copies = sum(self_us.get(k, 0.0) for k in ("aten::copy_", "aten::where", "aten::fill_"))
    compute = sum(v for k, v in self_us.items() if k in ("aten::mm", "aten::addmm", "aten::bmm")
                  or "scaled_dot_product" in k)  # fmt: skip
    verdict = (
        "the functional cache-aware forward is memory-bound on copying the whole batch's "
        "cache every step"
        if copies > compute
        else "compute dominates at this size"
    )
    return [
        f"One decode forward of {rows} rows (one token each) over caches of "
        f"{int(lengths.min())}-{longest} tokens, padded to {longest}, through `forward` (the "
        "engine's route for a model without the serving seam; this model takes the in-place "
        f"route, timed above): {total / 1e3:.0f} ms of CPU op time, "
        f"{100 * copies / total:.0f}% in copies "
        f"(`copy_`, `where`, `fill_`: the grouped-query `repeat_interleave` of every row's "
        f"padded K/V and the new output cache), {100 * compute / total:.0f}% in matmuls and "
        f"attention: {verdict}.",
        "",
    ], copies / total


def model_device(model: Any) -> torch.device:
    device: torch.device = next(iter(model.parameters())).device
    return device


def _tight_lines(
    tight: EngineRun, quarter: int, peak: int, expected: list[list[int]], prompt_tokens: int
) -> list[str]:
    complete = sum(len(out) == len(want) for out, want in zip(tight.outputs, expected, strict=True))
    exact = exact_count(tight.outputs, expected)
    lines = [
        f"Tight pool: {quarter} blocks, a quarter of the peak demand ({peak}). "
        f"{complete}/{len(expected)} requests complete, {exact}/{len(expected)} exactly equal to "
        f"serving them one at a time; {tight.preemptions} preemptions, "
        f"{tight.prefill_tokens - prompt_tokens} tokens recomputed beyond the prompts; "
        f"{tight.seconds:.2f} s, {len(tight.steps)} steps.",
    ]
    diverged = first_divergence(tight.outputs, expected)
    if diverged:
        lines.append(f"Not exact: {diverged}.")
    return [*lines, ""]


def _plot(engine: EngineRun, tight: EngineRun, quarter: int, shape: Shape, path: Path) -> None:
    figure, (rows, tokens, pool) = new_figure(1, 3, size=(16.0, 4.2))
    at = [s.at for s in engine.steps]
    rows.step(at, [s.rows for s in engine.steps], where="post", label="rows (requests)")
    rows.step(at, [s.decodes for s in engine.steps], where="post", label="decode rows")
    rows.axhline(shape.max_num_seqs, color="grey", linestyle=":", label="max_num_seqs")
    rows.set_xlabel("seconds since all requests arrived")
    rows.set_ylabel("rows per step")
    rows.set_title("batch occupancy: rows")
    rows.legend()
    tokens.step(at, [s.padded for s in engine.steps], where="post", label="computed (padded)")
    tokens.step(at, [s.tokens for s in engine.steps], where="post", label="scheduled tokens")
    tokens.axhline(
        shape.max_num_batched_tokens, color="grey", linestyle=":", label="max_num_batched_tokens"
    )
    tokens.set_yscale("log")
    tokens.set_xlabel("seconds since all requests arrived")
    tokens.set_ylabel("tokens per step")
    tokens.set_title("batch occupancy: tokens")
    tokens.legend()
    tight_at = [s.at for s in tight.steps]
    pool.step(tight_at, [s.used_blocks for s in tight.steps], where="post", label="used blocks")
    pool.step(tight_at, [s.rows for s in tight.steps], where="post", label="rows")
    preempt_at = [s.at for s in tight.steps if s.preempted]
    pool.plot(preempt_at, [quarter] * len(preempt_at), "rv", label="preemption")
    pool.axhline(quarter, color="grey", linestyle=":", label="pool size")
    pool.set_xlabel("seconds since all requests arrived")
    pool.set_title(f"tight pool ({quarter} blocks): {tight.preemptions} preemptions")
    pool.legend()
    save_figure(figure, path)


def _targets(
    speedup: float,
    engine: EngineRun,
    tight: EngineRun,
    expected: list[list[int]],
    sizes: tuple[int, int, int],
    copy_share: float,
) -> list[TargetCheck]:
    quarter, peak, prompt_tokens = sizes
    exact = exact_count(engine.outputs, expected)
    met = speedup >= GOAL
    real = sum(s.tokens for s in engine.steps)
    padded = sum(s.padded for s in engine.steps)
    bounds = []
    if not met:
        bounds.append(
            f"measured: the model call is {100 * engine.model_seconds / engine.seconds:.0f}% of "
            f"the engine's wall time and {100 * (padded - real) / max(padded, 1):.0f}% of the "
            "positions it computes are padding (decode rows padded to the widest prefill chunk); "
            f"{100 * copy_share:.0f}% of one engine-shaped decode step through `forward` is "
            "copying K/V (the in-place route avoids most of it)"
        )
    if exact < len(expected):
        bounds.append(first_divergence(engine.outputs, expected))
    tight_exact = exact_count(tight.outputs, expected)
    n = len(expected)
    return [
        TargetCheck(
            f"engine throughput, {n} mixed requests, vs one at a time (serving path)",
            f">= {GOAL:g}x",
            f"{fmt_ratio(speedup)} ({exact}/{n} outputs exact)",
            met and exact == n,
            "; ".join(bounds),
        ),
        TargetCheck(
            f"pool of a quarter of the peak demand ({quarter} of {peak} blocks)",
            "every request completes, outputs exact",
            f"{tight_exact}/{n} exact, {tight.preemptions} preemptions, "
            f"{tight.prefill_tokens - prompt_tokens} tokens recomputed",
            tight_exact == n,
            "" if tight_exact == n else first_divergence(tight.outputs, expected),
        ),
    ]
