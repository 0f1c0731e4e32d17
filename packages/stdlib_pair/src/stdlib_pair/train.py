"""Train the pair from scratch, deterministically (``nox -s train``).

Recipe (fixed, no wall-clock decisions, so a rerun on the same machine and thread
count gives the same weights): seed 0; the stdlib's top-level ``*.py`` files but
``HELD_OUT``, as one byte stream; each step takes ``BATCH`` random windows of
``SEQUENCE`` bytes (a seeded generator); AdamW (betas 0.9/0.95, weight decay 0.1),
linear warm-up then cosine decay to a tenth, gradient clipping at 1.0. The target
learns the bytes (cross-entropy); the draft then learns the trained target's
distributions on the same windows (forward KL, distillation). Writes
``target.safetensors``, ``draft.safetensors``, ``heldout.safetensors`` (the held-out
tokens scored) and ``card.json``.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import torch
from torch import Tensor
from torch.nn import functional

from cache_aware_lm.modern import ModernCacheAwareLM

from .corpus import HELD_OUT, VOCAB_SIZE, source_files, token_stream
from .evaluate import WINDOW, acceptance_rate, held_out_loss
from .weights import CONFIGS, load_model, save_held_out, save_model, weights_directory

SEED = 0
SEQUENCE = 256  # the models' whole context
BATCH = 8
HELD_OUT_BYTES = 64 * WINDOW + 1  # 64 windows of 128 scored bytes
RECIPE = {"target": {"steps": 1000, "lr": 3e-3}, "draft": {"steps": 1200, "lr": 5e-3}}
# The draft learns the trained target's next-byte distribution (forward KL on the same
# windows), not the data's: speculation pays for agreement with the target, not accuracy.
TEACHER = {"draft": "target"}


def learning_rate(step: int, steps: int, peak: float) -> float:
    warmup = max(steps // 20, 1)
    if step < warmup:
        return peak * (step + 1) / warmup
    progress = (step - warmup) / max(steps - warmup, 1)
    return peak * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress)))


def batches(stream: Tensor, steps: int, generator: torch.Generator) -> list[Tensor]:
    """Every step's ``[BATCH, SEQUENCE + 1]`` windows, drawn up front (same for both models)."""
    starts = torch.randint(0, stream.numel() - SEQUENCE - 1, (steps, BATCH), generator=generator)
    offsets = torch.arange(SEQUENCE + 1)
    return [stream[row[:, None] + offsets] for row in starts]


def distillation_loss(student_logits: Tensor, teacher_logits: Tensor) -> Tensor:
    """Mean KL(teacher || student) per position, in nats."""
    return functional.kl_div(
        functional.log_softmax(student_logits.flatten(0, 1), dim=-1),
        functional.log_softmax(teacher_logits.flatten(0, 1), dim=-1),
        log_target=True,
        reduction="batchmean",
    )


def train_one(
    name: str,
    data: list[Tensor],
    log_every: int,
    teacher: ModernCacheAwareLM | None = None,
) -> tuple[ModernCacheAwareLM, float]:
    """(trained model in eval mode, seconds); with ``teacher``, distilled from it."""
    torch.manual_seed(SEED)
    model = ModernCacheAwareLM(CONFIGS[name])
    steps, peak = int(RECIPE[name]["steps"]), float(RECIPE[name]["lr"])
    optimizer = torch.optim.AdamW(model.parameters(), lr=peak, betas=(0.9, 0.95), weight_decay=0.1)
    positions = torch.arange(SEQUENCE).expand(BATCH, SEQUENCE)
    model.train()
    started = time.perf_counter()
    for step in range(steps):
        window = data[step]
        for group in optimizer.param_groups:
            group["lr"] = learning_rate(step, steps, peak)
        logits = model(window[:, :-1], positions).logits
        if teacher is None:
            loss = functional.cross_entropy(logits.flatten(0, 1), window[:, 1:].flatten())
        else:
            with torch.no_grad():
                teacher_logits = teacher(window[:, :-1], positions).logits
            loss = distillation_loss(logits, teacher_logits)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()  # type: ignore[no-untyped-call]
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        if step % log_every == 0 or step == steps - 1:
            elapsed = time.perf_counter() - started
            print(f"{name} step {step + 1}/{steps} loss {loss.item():.3f} ({elapsed:.0f}s)",
                  flush=True)  # fmt: skip
    return model.eval(), time.perf_counter() - started


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m stdlib_pair.train", description=__doc__)
    parser.add_argument("--out", type=Path, default=weights_directory())
    parser.add_argument("--threads", type=int, default=2, help="torch threads (part of the recipe)")
    parser.add_argument("--steps", type=int, default=None, help="override both step counts")
    parser.add_argument(
        "--only-draft",
        action="store_true",
        help="keep the target already in --out (as this recipe trained it); retrain the draft",
    )
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    if args.steps is not None:
        for recipe in RECIPE.values():
            recipe["steps"] = args.steps
    args.out.mkdir(parents=True, exist_ok=True)

    training_files, held_out_files = source_files()
    stream = token_stream(training_files)
    held_out = token_stream(held_out_files)[:HELD_OUT_BYTES]
    print(f"corpus: {len(training_files)} files, {stream.numel():,} bytes; held out: "
          f"{', '.join(HELD_OUT)} ({held_out.numel():,} bytes scored)", flush=True)  # fmt: skip
    steps = max(int(r["steps"]) for r in RECIPE.values())
    data = batches(stream, steps, torch.Generator().manual_seed(SEED))

    models: dict[str, ModernCacheAwareLM] = {}
    seconds: dict[str, float] = {}
    if args.only_draft:
        models["target"] = load_model("target", args.out)
        seconds["target"] = float(json.loads((args.out / "card.json").read_text("utf-8"))
                                  ["results"]["target"]["train_seconds"])  # fmt: skip
    for name in ("target", "draft"):
        if name in models:
            continue
        teacher = models.get(TEACHER.get(name, ""))
        models[name], seconds[name] = train_one(name, data, log_every=5, teacher=teacher)
        save_model(models[name], args.out / f"{name}.safetensors")
    corpus = {
        "python": sys.version.split()[0],
        "files": len(training_files),
        "bytes": stream.numel(),
        "held_out_files": list(HELD_OUT),
    }
    finish(args.out, models, seconds, held_out, corpus, args.threads)
    return 0


def finish(
    out: Path,
    models: dict[str, ModernCacheAwareLM],
    seconds: dict[str, float],
    held_out: Tensor,
    corpus: dict[str, object],
    threads: int,
) -> None:
    """Score the trained pair and write heldout.safetensors and card.json beside the weights."""
    results: dict[str, dict[str, float]] = {}
    for name, model in models.items():
        loss = held_out_loss(model, held_out)
        results[name] = {"train_seconds": round(seconds[name], 1), "held_out_loss": round(loss, 5)}
        print(f"{name}: held-out loss {loss:.4f} nats/byte ({seconds[name]:.0f}s)", flush=True)
    acceptance = acceptance_rate(
        models["target"], models["draft"], held_out, prompts=4, new_tokens=64
    )
    save_held_out(held_out, out / "heldout.safetensors")
    record = {
        "vocab_size": VOCAB_SIZE,
        "tokenizer": "bytes 0..255, separator 256",
        "recipe": {
            "seed": SEED,
            "sequence": SEQUENCE,
            "batch": BATCH,
            "threads": threads,
            "models": RECIPE,
            "distilled": TEACHER,
        },
        "corpus": corpus,
        "results": results,
        "draft_acceptance_rate": round(acceptance, 4),
        "acceptance_setting": "greedy, k=4, 4 held-out prompts of 32 bytes, 64 new tokens",
        "train_seconds_total": round(sum(seconds.values()), 1),
    }
    (out / "card.json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    print(f"acceptance rate {acceptance:.3f}; wrote {out}")


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
