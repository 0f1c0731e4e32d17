"""``python -m scheduler`` / ``gptlab-serve``: serve a few prompts through the engine.

With ``stdlib_pair`` installed, its trained byte-level target serves text prompts
(bytes in, bytes out). Otherwise (or with ``--random``) a random test model
serves prompts as token ids modulo its vocabulary: the scheduling is the point.
``stdlib_pair`` is imported only here, and only if present: the scheduler does
not depend on it.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from .engine import Engine

DEFAULT_PROMPTS = ("def main(", "import os\n", "class Config:\n    ", "    return ")


@dataclass(frozen=True)
class Served:
    """A model with its context and how text becomes tokens and back."""

    name: str
    model: object
    context_length: int
    encode: Callable[[str], list[int]]
    decode: Callable[[list[int]], str]


def trained_target() -> Served | None:
    try:
        pair = importlib.import_module("stdlib_pair")
    except ImportError:
        return None
    model = pair.load_model("target")
    return Served(
        "stdlib_pair target",
        model,
        model.config.context_length,
        lambda text: [int(t) for t in pair.encode(text.encode())],
        lambda tokens: pair.decode(tokens).decode("utf-8", "replace"),
    )


def random_model() -> Served:
    from cache_aware_lm.modern import make_test_model

    model = make_test_model()
    vocab = model.config.vocab_size
    return Served(
        "random test model",
        model,
        model.config.context_length,
        lambda text: [byte % vocab for byte in text.encode()],
        lambda tokens: " ".join(str(t) for t in tokens),
    )


def parse(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m scheduler", description=__doc__)
    parser.add_argument("--prompt", action="append", help="a prompt (repeat for more)")
    parser.add_argument("--max-new-tokens", type=int, default=48)
    parser.add_argument("--temperature", type=float, default=0.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--num-blocks", type=int, default=64)
    parser.add_argument("--block-size", type=int, default=16)
    parser.add_argument("--max-num-batched-tokens", type=int, default=64)
    parser.add_argument("--max-num-seqs", type=int, default=8)
    parser.add_argument("--random", action="store_true", help="a random model, even if trained")
    parser.add_argument("--progress", action="store_true", help="show a progress bar")
    return parser.parse_args(list(argv))


def main(argv: Sequence[str] | None = None) -> int:
    args = parse(sys.argv[1:] if argv is None else argv)
    served = (None if args.random else trained_target()) or random_model()
    budget = min(args.max_new_tokens, served.context_length - 1)
    keep = served.context_length - budget  # a prompt keeps its last tokens that fit
    prompts = [served.encode(text)[-keep:] for text in (args.prompt or DEFAULT_PROMPTS)]
    engine = Engine(
        served.model,  # type: ignore[arg-type]
        context_length=served.context_length,
        num_blocks=args.num_blocks,
        block_size=args.block_size,
        max_num_batched_tokens=args.max_num_batched_tokens,
        max_num_seqs=args.max_num_seqs,
    )
    outputs: list[list[int]] = [[] for _ in prompts]
    started = time.perf_counter()
    with torch.inference_mode():
        for out in engine.generate(
            prompts, budget, temperature=args.temperature, seed=args.seed, progress=args.progress
        ):
            outputs[out.index].append(out.token_id)
    seconds = time.perf_counter() - started
    for text, tokens in zip(args.prompt or DEFAULT_PROMPTS, outputs, strict=True):
        print(f"--- {text!r}\n{served.decode(tokens)}")
    stats = engine.stats
    generated = sum(len(tokens) for tokens in outputs)
    print(
        f"[{served.name}] {len(prompts)} requests, {generated} tokens in {stats.steps} steps, "
        f"{seconds:.2f} s ({generated / seconds:.1f} tokens/s), {stats.preemptions} preemptions"
    )
    return 0
