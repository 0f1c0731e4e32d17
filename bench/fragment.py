"""9. The paper fragment (M10) served by the scheduler's engine vs one request at a time.

The capstone's cache follows the cache-aware contract, so ``scheduler.Engine`` serves it
unchanged (its padded route: rows with their own cache lengths, through ``forward``). The
same seeded requests (prompts of 16-96 tokens, 16-48 new, greedy, all arriving at once)
are served two ways, alternating round by round:

- one at a time, each by the model's own cached greedy loop (``PaperFragmentLM.generate``);
- by the engine over a block pool holding every request, each step one model call over
  the running decodes and prompt chunks.

Both must give the same tokens; reported: generated tokens/s of each and their ratio.
"""

from __future__ import annotations

import statistics
import time

import torch

from fragment_lm import PaperFragmentLM, tiny_random_fragment
from scheduler import Engine

from .common import Progress, Section, Settings, TargetCheck, fmt_ratio

Requests = list[tuple[list[int], int]]  # (prompt, new tokens) per request

BLOCK = 16
GOAL = 1.5  # the engine over one at a time, one thread


def _model(settings: Settings) -> PaperFragmentLM:
    sizes = {
        "vocab_size": 4096,
        "hidden_size": 128 if settings.quick else 256,
        "num_hidden_layers": 2 if settings.quick else 4,
        "num_attention_heads": 4 if settings.quick else 8,
        "num_key_value_heads": 2,
        "head_dim": 32,
        "intermediate_size": 256 if settings.quick else 512,
        "max_position_embeddings": 256,
    }
    return tiny_random_fragment(seed=0, **sizes).to(settings.device)


def _requests(settings: Settings) -> Requests:
    generator = torch.Generator().manual_seed(9)
    count = 6 if settings.quick else 24
    requests = []
    for _ in range(count):
        length = int(torch.randint(16, 97, (1,), generator=generator))
        budget = int(torch.randint(16, 49, (1,), generator=generator))
        prompt = torch.randint(0, 4096, (length,), generator=generator).tolist()
        requests.append((prompt, budget))
    return requests


def _one_at_a_time(
    model: PaperFragmentLM, requests: Requests, settings: Settings
) -> list[list[int]]:
    outputs = []
    for prompt, budget in requests:
        ids = torch.tensor([prompt], device=settings.device)
        positions = torch.arange(len(prompt), device=settings.device)[None]
        out = model.generate(ids, positions, budget)
        outputs.append(out[0, len(prompt) :].tolist())
    return outputs


def _served(model: PaperFragmentLM, requests: Requests, settings: Settings) -> list[list[int]]:
    blocks = sum(-(-(len(p) + n) // BLOCK) for p, n in requests)
    engine = Engine(
        model,
        context_length=model.config.max_position_embeddings,
        num_blocks=blocks,
        block_size=BLOCK,
        max_num_batched_tokens=256,
        max_num_seqs=len(requests),
    )
    outputs: dict[int, list[int]] = {}
    prompts = [p for p, _ in requests]
    budgets = [n for _, n in requests]
    for item in engine.generate(prompts, budgets):
        outputs.setdefault(item.index, []).append(item.token_id)
    return [outputs[i] for i in range(len(requests))]


def run(settings: Settings, progress: Progress) -> Section:
    model = _model(settings)
    requests = _requests(settings)
    generated = sum(n for _, n in requests)
    times: dict[str, list[float]] = {"alone": [], "served": []}
    tokens: dict[str, list[list[int]]] = {}
    with torch.no_grad():
        for round_ in range(settings.repeats):
            for name, serve in (("alone", _one_at_a_time), ("served", _served)):
                progress.step(f"round {round_ + 1}/{settings.repeats}: {name}")
                settings.sync()
                started = time.perf_counter()
                tokens[name] = serve(model, requests, settings)
                settings.sync()
                times[name].append(time.perf_counter() - started)
    same = tokens["alone"] == tokens["served"]
    alone, served = statistics.median(times["alone"]), statistics.median(times["served"])
    ratio = alone / served
    section = Section("9. The paper fragment (M10) served by the engine")
    c = model.config
    section.body += [
        f"Model: `PaperFragmentLM`, {c.num_hidden_layers} layers, hidden {c.hidden_size}, "
        f"{c.num_attention_heads}/{c.num_key_value_heads} heads, {c.num_experts} experts "
        f"(top {c.experts_per_token}), vocab {c.vocab_size}. {len(requests)} requests, "
        f"{generated} generated tokens, greedy; median of {settings.repeats} rounds.",
        "",
        "| way | seconds | generated tokens/s |",
        "|---|---|---|",
        f"| one request at a time (`generate`) | {alone:.2f} | {generated / alone:.0f} |",
        f"| `scheduler.Engine` | {served:.2f} | {generated / served:.0f} |",
        "",
        f"Same tokens both ways: {'yes' if same else 'NO'}.",
    ]
    section.targets.append(
        TargetCheck(
            "M10 served vs one request at a time",
            f">= {GOAL:g}x, same tokens",
            f"{fmt_ratio(ratio)}, {'same' if same else 'different'} tokens",
            ratio >= GOAL and same,
            "" if same else "the engine's tokens differ from the model's own",
        )
    )
    return section
