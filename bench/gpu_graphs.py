"""CUDA graphs for the paged decode step, for a lent GPU (``bench/gpu_check.sh``).

``python -m bench.gpu_graphs --out DIR`` writes ``DIR/graphs.md``: one decode step of
the paged in-place path (``paged_kv.paged_forward_fast``'s model call: ``run_blocks``
over the pool plus the head) run eagerly and replayed from a CUDA graph, at two
shapes: 8 rows at context 512 (section 6's decode step) and 64 rows at mixed contexts
16-767 (section 8's engine, every request decoding). The step's host work (block
reservation, slot tables, visibility mask) is done once, outside the graph, as an
engine that captures its model call keeps static metadata buffers; the graph then
replays the same step (it writes the same slots each time), so its time is the
model call's device time without per-kernel launches. Logits of the replay are
compared with the eager step's.

The compiled decode's graphs (``CompiledDecoder``, ``reduce-overhead`` on CUDA) and
the engine's eager throughput on the GPU come from ``bench.run --device cuda --only 7,8``.
On CPU this module measures the first shape's eager step only (a smoke run) and says no
GPU was there.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch
from torch import Tensor

import paged_kv
from cache_aware_lm import folded_grouped_query_attention
from paged_kv.paged_attention import PagedCacheWriter, pool_slot_positions

from .common import Settings, build_modern, modern_config

BLOCK = 16
NAMESPACE = paged_kv.PagedNamespace("bench-graphs", "seed-1234")


def _median_ms(settings: Settings, call: Callable[[], object], repeats: int = 50) -> float:
    times = []
    for _ in range(repeats):
        settings.sync()
        started = time.perf_counter()
        call()
        settings.sync()
        times.append(time.perf_counter() - started)
    return 1e3 * statistics.median(times)


def _decode_step(
    settings: Settings, contexts: list[int]
) -> tuple[Callable[[], Tensor], dict[str, str]]:
    """The model call of one decode step over ``len(contexts)`` requests, its metadata fixed."""
    context_length = max(contexts) + 2
    model = build_modern(modern_config(context_length), settings)
    g = model.geometry
    blocks = sum(-(-(c + 1) // BLOCK) for c in contexts) + len(contexts)
    pool = paged_kv.PagedKVCache(
        g.n_layers, g.n_kv_heads, g.head_dim, blocks, BLOCK, device=settings.device
    )
    generator = torch.Generator().manual_seed(5)
    ids = [str(row) for row in range(len(contexts))]
    with torch.inference_mode():
        for rid, context in zip(ids, contexts, strict=True):
            prompt = torch.randint(0, g.vocab_size, (1, context), generator=generator)
            prompt = prompt.to(settings.device)
            pool.admit(rid, prompt[0].tolist(), NAMESPACE)
            positions = torch.arange(context, device=settings.device)[None]
            paged_kv.paged_forward_fast(model, pool, [rid], prompt, positions)
    tokens = torch.ones(len(contexts), 1, dtype=torch.long, device=settings.device)
    positions = torch.tensor(contexts, device=settings.device)[:, None]
    pending = pool.reserve(ids, tokens, positions)
    slot_positions = pool_slot_positions(pending, pool.block_size, pool.device)
    slots = slot_positions[:, None, :]
    visible = (slots >= 0) & (slots <= positions[:, :, None])

    def step() -> Tensor:
        writer = PagedCacheWriter(pool.pool, pending.slots, slot_positions.shape[1])
        with torch.inference_mode():
            hidden, _ = model.run_blocks(
                tokens, positions, visible[:, None], writer, folded_grouped_query_attention
            )
            logits: Tensor = model.lm_head(hidden)
        return logits

    return step, {"rows": str(len(contexts)), "slots": str(slot_positions.shape[1])}


def _graph_row(settings: Settings, name: str, contexts: list[int]) -> str:
    step, facts = _decode_step(settings, contexts)
    eager_logits = step()
    eager_ms = _median_ms(settings, step, 50 if settings.device.type == "cuda" else 3)
    if settings.device.type != "cuda":
        return f"| {name} | {facts['rows']} | {eager_ms:.2f} | - | - | no GPU |"
    try:
        side = torch.cuda.Stream()  # type: ignore[no-untyped-call]
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                step()  # warm-up on a side stream, as torch.cuda.graph requires
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            graph_logits = step()
        graph.replay()
        settings.sync()
        same = torch.allclose(graph_logits, eager_logits, atol=1e-4, rtol=1e-4)
        graph_ms = _median_ms(settings, graph.replay)
    except Exception as error:  # report why the capture failed instead of stopping the check
        return f"| {name} | {facts['rows']} | {eager_ms:.2f} | - | - | capture failed: {error!r} |"
    verdict = "logits equal the eager step's" if same else "LOGITS DIFFER"
    return (
        f"| {name} | {facts['rows']} | {eager_ms:.2f} | {graph_ms:.2f} | "
        f"{eager_ms / graph_ms:.2f}x | {verdict} |"
    )


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.gpu_graphs", description=__doc__)
    parser.add_argument("--out", type=Path, default=Path("bench/out/gpu"))
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = parser.parse_args(argv)
    settings = Settings(torch.device(args.device), False, args.out, 1)
    generator = torch.Generator().manual_seed(8)
    mixed = torch.randint(16, 768, (64,), generator=generator).tolist()
    lines = [
        "# CUDA graphs for the paged decode step",
        "",
        f"device: {settings.device}"
        + (f" ({torch.cuda.get_device_name()})" if settings.device.type == "cuda" else ""),
        "",
        "| step | rows | eager ms | graph replay ms | speedup | check |",
        "|---|---:|---:|---:|---:|---|",
        _graph_row(settings, "paged in-place decode, context 512", [512] * 8),
    ]
    if settings.device.type == "cuda":  # on CPU its 64 prefills alone take minutes
        lines.append(_graph_row(settings, "engine-shaped decode, mixed contexts 16-767", mixed))
    lines.append("")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "graphs.md").write_text("\n".join(lines), encoding="utf-8")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
