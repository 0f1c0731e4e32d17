"""Live demo: the trained pair continues a prompt with speculative decoding on the serving cache.

    python -m stdlib_pair.demo "def fibonacci(n):"          # nox -s demo -- "def fibonacci(n):"
    python -m stdlib_pair.demo --quick                      # a few seconds (run in CI)

The continuation streams as rounds end: draft tokens the target accepted in green,
tokens where the target replaced the draft's proposal in red, the target's bonus
token after a fully accepted round in blue. Then, measured in this run on the same
prompt: tokens/s of speculative decoding and of plain greedy decoding on the serving
path (``serve_generate``), the acceptance rate, the speedup, and whether both emitted
the same tokens (they must: greedy speculation is lossless).
"""

from __future__ import annotations

import argparse
import codecs
import statistics
import sys
import time
from dataclasses import dataclass

import torch
from torch import Tensor

from cache_aware_lm import serve_generate
from cache_aware_lm.modern import ModernCacheAwareLM
from speculative import SpeculativeOutput, serve_speculative_generate

from .corpus import SEPARATOR, encode
from .evaluate import storage
from .weights import load_model

STYLES = {"accepted": "green", "replaced": "bold red", "bonus": "blue"}


class Stream:
    """Bytes out as they arrive, decoded incrementally (a character may span tokens)."""

    def __init__(self, colour: bool) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._console = None
        if colour:
            try:
                from rich.console import Console

                self._console = Console(highlight=False)
            except ImportError:
                pass

    def write(self, tokens: list[int], kind: str) -> None:
        data = bytes(t for t in tokens if t != SEPARATOR)
        text = self._decoder.decode(data)
        if self._console is not None:
            from rich.text import Text

            self._console.print(Text(text, style=STYLES[kind]), end="")
        else:
            sys.stdout.write(text)
        sys.stdout.flush()


@dataclass(frozen=True)
class Timing:
    speculative_seconds: float
    plain_seconds: float
    identical: bool


def _prompt(text: str) -> tuple[Tensor, Tensor]:
    ids = encode(text.encode("utf-8"))[None]
    return ids, torch.arange(ids.shape[1])[None]


def _speculate(
    target: ModernCacheAwareLM,
    draft: ModernCacheAwareLM,
    ids: Tensor,
    positions: Tensor,
    budget: int,
    width: int,
    stream: Stream | None = None,
) -> SpeculativeOutput:
    capacity = ids.shape[1] + budget

    def on_round(accepted: list[int], own: int | None, replaced: bool) -> None:
        assert stream is not None
        stream.write(accepted, "accepted")
        if own is not None:
            stream.write([own], "replaced" if replaced else "bonus")

    return serve_speculative_generate(
        target, draft, ids, positions, budget, width,
        storage(target, capacity), storage(draft, capacity), SEPARATOR,
        on_round=None if stream is None else on_round,
    )  # fmt: skip


def _plain(target: ModernCacheAwareLM, ids: Tensor, positions: Tensor, budget: int) -> Tensor:
    return serve_generate(
        target, ids, positions, budget, storage(target, ids.shape[1] + budget), SEPARATOR
    )


def measure(
    target: ModernCacheAwareLM,
    draft: ModernCacheAwareLM,
    ids: Tensor,
    positions: Tensor,
    budget: int,
    width: int,
    repeats: int,
) -> Timing:
    """Median wall seconds of each, interleaved round by round; tokens compared."""
    spec_times, plain_times, identical = [], [], True
    for _ in range(repeats):
        started = time.perf_counter()
        spec = _speculate(target, draft, ids, positions, budget, width)
        spec_times.append(time.perf_counter() - started)
        started = time.perf_counter()
        plain = _plain(target, ids, positions, budget)
        plain_times.append(time.perf_counter() - started)
        identical = identical and torch.equal(spec.tokens, plain)
    return Timing(statistics.median(spec_times), statistics.median(plain_times), identical)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m stdlib_pair.demo",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("prompt", nargs="?", default="def fibonacci(n):")
    parser.add_argument("--tokens", type=int, default=None, help="new bytes (default 200)")
    parser.add_argument("-k", type=int, default=4, help="speculative tokens per round")
    parser.add_argument("--repeats", type=int, default=None, help="timed rounds (default 3)")
    parser.add_argument("--threads", type=int, default=None, help="torch threads")
    parser.add_argument("--quick", action="store_true", help="48 bytes, one timed round")
    parser.add_argument("--no-colour", action="store_true")
    args = parser.parse_args(argv)
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    budget = args.tokens if args.tokens is not None else (48 if args.quick else 200)
    repeats = args.repeats if args.repeats is not None else (1 if args.quick else 3)

    target, draft = load_model("target"), load_model("draft")
    ids, positions = _prompt(args.prompt)
    limit = target.config.context_length - ids.shape[1] - 1
    if budget > limit:
        print(f"demo: {budget} new bytes do not fit the context; using {limit}")
        budget = limit
    stream = Stream(colour=not args.no_colour)
    print(args.prompt, end="", flush=True)
    with torch.inference_mode():
        out = _speculate(target, draft, ids, positions, budget, args.k, stream)
        timing = measure(target, draft, ids, positions, budget, args.k, repeats)
    emitted = out.tokens.shape[1] - ids.shape[1]
    print("\n")
    print("legend: green = draft token accepted, red = target replaced the draft's token, "
          "blue = target's bonus token")  # fmt: skip
    print(f"{emitted} new bytes, k = {args.k}, {torch.get_num_threads()} thread(s), "
          f"median of {repeats} run(s):")  # fmt: skip
    spec_rate = emitted / timing.speculative_seconds
    plain_rate = emitted / timing.plain_seconds
    print(f"  speculative (serving cache): {spec_rate:8.1f} tokens/s")
    print(f"  plain greedy (serving path): {plain_rate:8.1f} tokens/s")
    print(f"  acceptance rate {out.acceptance_rate:.2f} "
          f"({out.accepted_draft_tokens}/{out.proposed_tokens}), "
          f"{out.verification_steps} target calls for {emitted} bytes")  # fmt: skip
    print(f"  speedup {timing.plain_seconds / timing.speculative_seconds:.2f}x; tokens identical "
          f"to plain greedy: {'yes' if timing.identical else 'NO'}")  # fmt: skip
    return 0 if timing.identical else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
