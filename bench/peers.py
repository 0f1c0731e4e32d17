"""Section 8's peers: transformers serving the same workload on the same weights.

Two ways a user of transformers would serve 64 requests of mixed lengths on CPU:

- continuous batching (``LlamaForCausalLM.continuous_batching_context_manager``,
  each request added with its own ``max_new_tokens``; the manager's background
  thread schedules paged prefill chunks and decodes, attention ``sdpa`` or
  ``paged|eager``), block size and token budget matched to the engine's;
- one static batch (``generate`` on the left-padded prompts with the largest
  ``max_new_tokens``; each request's output is its first ``max_new_tokens``).

Each returns the generated tokens per request and the times each token was emitted,
so TTFT and per-token latency are measured the same way as the engine's. And the
compute floor: the workload's FLOPs over the matmul rate measured at its shapes.
"""

from __future__ import annotations

import contextlib
import itertools
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn

from .common import Settings, timed

Workload = list[tuple[list[int], int]]  # (prompt ids, max_new_tokens) per request


@dataclass
class PeerRun:
    """Outputs and emission times (seconds after the run began) of one way of serving."""

    seconds: float
    outputs: list[list[int]]
    first_token: list[float]
    token_gaps: list[float]
    cpu_seconds: float = 0.0  # the process's CPU time (every thread) over the same span


def continuous_batching(
    hf_model: Any,
    requests: Workload,
    *,
    block_size: int,
    num_blocks: int,
    max_batch_tokens: int,
    max_requests: int,
    attention: str,
) -> PeerRun:
    """transformers' continuous batching, every request arriving at once (timestamps per token)."""
    from transformers import GenerationConfig
    from transformers.generation.configuration_utils import ContinuousBatchingConfig

    hf_model.set_attn_implementation(attention)
    generation = GenerationConfig(
        do_sample=False,
        max_new_tokens=max(n for _, n in requests),
        eos_token_id=-1,  # no EOS, like the engine's run
        pad_token_id=0,
    )
    batching = ContinuousBatchingConfig(
        page_size=block_size,
        num_blocks=num_blocks,
        max_batch_tokens=max_batch_tokens,
        max_requests_per_batch=max_requests,
        auto_switch_to_flash=False,  # keep the attention asked for (no flash on CPU)
    )
    results: dict[str, Any] = {}
    threads = torch.get_num_threads()

    def same_threads(module: object, args: object) -> None:
        # The manager's generation thread would start with OpenMP's default (every core):
        # torch.set_num_threads holds for the thread that called it only.
        if torch.get_num_threads() != threads:
            torch.set_num_threads(threads)

    hook = hf_model.register_forward_pre_hook(same_threads)
    with torch.inference_mode(), contextlib.ExitStack() as cleanup:
        cleanup.callback(hook.remove)
        manager_cm = hf_model.continuous_batching_context_manager(
            generation_config=generation, continuous_batching_config=batching, warmup=False
        )
        with manager_cm as manager:
            begin, cpu_begin = time.perf_counter(), time.process_time()
            ids = [
                manager.add_request(prompt, max_new_tokens=n, record_timestamps=True)
                for prompt, n in requests
            ]
            while len(results) < len(ids):
                result = manager.get_result(timeout=1)
                if result is not None and result.is_finished():
                    results[result.request_id] = result
                elif result is None and not manager.is_running():
                    raise RuntimeError("transformers' continuous batching thread stopped early")
            seconds = time.perf_counter() - begin
            cpu_seconds = time.process_time() - cpu_begin
    run = PeerRun(seconds, [], [], [], cpu_seconds)
    for request_id in ids:
        result = results[request_id]
        if result.error is not None:
            raise RuntimeError(f"transformers request {request_id} failed: {result.error}")
        stamps = [stamp - begin for stamp in result.timestamps or []]
        run.outputs.append(list(result.generated_tokens))
        run.first_token.append(stamps[0] if stamps else float("nan"))
        run.token_gaps += [b - a for a, b in itertools.pairwise(stamps)]
    return run


class _StepClock:
    """A stopping criterion that never stops: it records when each generated token appeared."""

    def __init__(self) -> None:
        self.stamps: list[float] = []

    def __call__(self, input_ids: Tensor, scores: Tensor, **kwargs: object) -> Tensor:
        self.stamps.append(time.perf_counter())
        return torch.zeros(input_ids.shape[0], dtype=torch.bool, device=input_ids.device)


def static_batch(hf_model: Any, requests: Workload, settings: Settings) -> PeerRun:
    """One ``generate`` call on the left-padded prompts, run to the largest max_new_tokens."""
    from transformers import StoppingCriteriaList

    hf_model.set_attn_implementation("sdpa")
    width = max(len(prompt) for prompt, _ in requests)
    ids = torch.zeros(len(requests), width, dtype=torch.long)
    mask = torch.zeros(len(requests), width, dtype=torch.long)
    for row, (prompt, _) in enumerate(requests):
        ids[row, width - len(prompt) :] = torch.tensor(prompt)
        mask[row, width - len(prompt) :] = 1
    longest = max(n for _, n in requests)
    clock = _StepClock()
    settings.sync()
    begin, cpu_begin = time.perf_counter(), time.process_time()
    with torch.inference_mode():
        out = hf_model.generate(
            ids.to(settings.device),
            attention_mask=mask.to(settings.device),
            max_new_tokens=longest,
            min_new_tokens=longest,
            do_sample=False,
            pad_token_id=0,
            stopping_criteria=StoppingCriteriaList([clock]),
        )
    seconds = time.perf_counter() - begin
    stamps = [stamp - begin for stamp in clock.stamps]
    run = PeerRun(seconds, [], [], [], time.process_time() - cpu_begin)
    for row, (_, n) in enumerate(requests):
        run.outputs.append(out[row, width : width + n].tolist())
        run.first_token.append(stamps[0])
        run.token_gaps += [b - a for a, b in itertools.pairwise(stamps[:n])]
    return run


# ---- the compute floor --------------------------------------------------------------------


@dataclass(frozen=True)
class Floor:
    prefill_flops: float
    decode_flops: float
    prefill_rate: float  # FLOP/s of the model's linear layers on a prefill step's rows
    decode_rate: float  # ... and on a decode step's rows

    @property
    def seconds(self) -> float:
        return self.prefill_flops / self.prefill_rate + self.decode_flops / self.decode_rate


def workload_flops(model: nn.Module, requests: Workload, heads_x_dim: int) -> tuple[float, float]:
    """(prefill, decode) FLOPs the workload needs at least: every token through every linear
    layer once, attention over its context, and one row of logits per generated token."""
    head = getattr(model, "lm_head", None)
    linears = [m for m in model.modules() if isinstance(m, nn.Linear) and m is not head]
    per_token = 2 * sum(m.in_features * m.out_features for m in linears)
    vocab_row = 2 * head.in_features * head.out_features if isinstance(head, nn.Linear) else 0
    n_layers = len(getattr(model, "blocks", [])) or 1
    attention = 4 * heads_x_dim * n_layers  # QK^T and PV, per (query, key) pair, all layers
    prefill = decode = 0.0
    for prompt, n in requests:
        P = len(prompt)
        prefill += per_token * P + attention * P * (P + 1) / 2 + vocab_row
        fed = n - 1  # the last sampled token is never fed back
        decode += per_token * fed + attention * sum(P + i + 1 for i in range(fed)) + vocab_row * fed
    return prefill, decode


def matmul_rate(model: nn.Module, rows: int, settings: Settings) -> float:
    """FLOP/s of one pass of every linear layer of the blocks on a [rows, in] input (the head
    is left out: the workload computes one row of logits per request per step, not ``rows``)."""
    head = getattr(model, "lm_head", None)
    linears = [m for m in model.modules() if isinstance(m, nn.Linear) and m is not head]
    inputs = [torch.randn(rows, m.in_features, device=settings.device) for m in linears]
    flops = 2 * rows * sum(m.in_features * m.out_features for m in linears)

    def one_pass() -> None:
        with torch.inference_mode():
            for linear, x in zip(linears, inputs, strict=True):
                linear(x)

    one_pass()
    repeats = 3 if rows > 1024 else 11
    return flops / statistics.median(timed(settings, one_pass)[0] for _ in range(repeats))


def compute_floor(
    model: nn.Module, requests: Workload, heads_x_dim: int, rows: Sequence[int], settings: Settings
) -> Floor:
    """The floor at the engine's shapes: prefill at ``rows[0]`` tokens, decode at ``rows[1]``."""
    prefill, decode = workload_flops(model, requests, heads_x_dim)
    prefill_rate = matmul_rate(model, rows[0], settings)
    return Floor(prefill, decode, prefill_rate, matmul_rate(model, rows[1], settings))
