"""The engine: requests in, one scheduled model call per step, tokens out.

    engine = Engine(model, context_length=..., num_blocks=..., block_size=...,
                    max_num_batched_tokens=..., max_num_seqs=...)
    engine.add_request("a", prompt_ids, max_new_tokens=32, eos_token_id=0)
    while engine.has_unfinished_requests():
        record = engine.step()       # who ran, how many tokens, who was preempted, ...

or ``for out in engine.generate(prompts, max_new_tokens): ...`` (streaming).

A step: the policy decides (``policy.py``), the batch runs once (``batch.py``),
every row whose chunk reached the end of its tokens draws its next token
(``sampling.py``), and requests that emitted EOS or their last allowed token
finish and free their blocks (full blocks stay cached for later prefix hits).

A step commits together or not at all (``atomic.py``): if the model call or a draw
fails, no request has advanced (tokens, K/V lengths, block tables, reference counts,
generators) and ``step()`` raises ``StepError`` naming the requests; calling it
again continues exactly. The rows of a failed model call are then run one at a
time, alone, until each has passed a step or failed one alone: a request that keeps
failing is found, and ``abort_request`` drops it (``generate`` does so itself).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import count

import torch
from tqdm.auto import tqdm

from cache_aware_lm import CacheAwareModel
from paged_kv import PagedKVCache, PagedNamespace

from . import checks
from .atomic import StagedWrites, StepError
from .batch import forward_mixed_batch
from .policy import Policy, StepPlan
from .request import Request
from .sampling import greedy_tokens, next_token


@dataclass(frozen=True)
class ScheduledRow:
    """One row of a step's model call."""

    request_id: Hashable
    num_tokens: int
    kind: str  # "decode" (the newest generated token) or "prefill" (anything else)


@dataclass(frozen=True)
class StepRecord:
    """What one step decided and produced."""

    scheduled: tuple[ScheduledRow, ...]
    preempted: tuple[Hashable, ...]
    emitted: dict[Hashable, int] = field(default_factory=dict)
    finished: tuple[Hashable, ...] = ()

    @property
    def num_batched_tokens(self) -> int:
        return sum(row.num_tokens for row in self.scheduled)


@dataclass(frozen=True)
class EngineStats:
    """Counters (lifetime) and the pool and queues now."""

    steps: int  # steps that ran a model call
    preemptions: int
    free_blocks: int
    cached_blocks: int
    used_blocks: int
    num_waiting: int
    num_running: int


@dataclass(frozen=True)
class StreamOutput:
    """One token of ``generate``'s stream: which prompt, which token, whether it was the last."""

    index: int
    token_id: int  # -1 on an error item (no token)
    finished: bool
    error: str | None = None  # set when the prompt's request failed and was aborted


@dataclass(frozen=True)
class _ModelShape:
    layers: int
    kv_heads: int
    head_dim: int
    vocab_size: int
    dtype: torch.dtype
    device: torch.device


def _probe(model: CacheAwareModel) -> _ModelShape:
    """Read the cache layout and vocabulary from one cached one-token forward.

    Anything that does not answer like a cache-aware model (docs/contracts.md) is refused
    here, before the pool is built: a TypeError naming ``model``.
    """
    parameters = getattr(model, "parameters", None)
    device = next(iter(parameters()), torch.empty(0)).device if callable(parameters) else None
    if device is not None and device.type == "meta":
        raise ValueError("model is on device meta: it has no weights to run")
    token = torch.zeros(1, 1, dtype=torch.long, device=device or "cpu")
    try:
        with torch.no_grad():
            output = model(token, token, use_cache=True)
    except Exception as error:
        raise TypeError(
            f"model must be a cache-aware model: model(input_ids [1, 1], positions [1, 1], "
            f"use_cache=True) raised {type(error).__name__}: {error}"
        ) from error
    return _shape_of(output)


def _shape_of(output: object) -> _ModelShape:
    """The probe's output must look like a cache-aware model's (logits, cache, metadata)."""
    logits = getattr(output, "logits", None)
    past = getattr(output, "past_key_values", None)
    has_metadata = hasattr(output, "cache_lengths") and hasattr(output, "cache_start_positions")
    if (
        not isinstance(logits, torch.Tensor)
        or logits.dim() != 3
        or not has_metadata
        or not isinstance(past, tuple | list)
        or not past
        or not all(
            isinstance(pair, tuple | list)
            and len(pair) == 2
            and all(isinstance(t, torch.Tensor) and t.dim() == 4 for t in pair)
            for pair in past
        )
    ):
        raise TypeError(
            "model must be a cache-aware model returning logits [B, T, V], past_key_values "
            "(one (key, value) pair [B, H_kv, S, D] per layer), cache_lengths and "
            f"cache_start_positions; got {type(output).__name__}"
        )
    key = past[0][0]
    if key.device.type == "meta":
        raise ValueError("model is on device meta: it returned no K/V values")
    return _ModelShape(
        layers=len(past),
        kv_heads=key.shape[1],
        head_dim=key.shape[3],
        vocab_size=logits.shape[-1],
        dtype=key.dtype,
        device=key.device,
    )


def _model_context(model: object) -> int | None:
    """The context length the model states (``geometry`` or ``config``), if it states one."""
    for holder in (getattr(model, "geometry", None), getattr(model, "config", None)):
        length = getattr(holder, "context_length", None)
        if isinstance(length, int) and not isinstance(length, bool):
            return length
    return None


class Engine:
    """Continuous batching over one paged K/V pool for one cache-aware model."""

    def __init__(
        self,
        model: CacheAwareModel,
        *,
        context_length: int,
        num_blocks: int,
        block_size: int = 16,
        max_num_batched_tokens: int = 256,
        max_num_seqs: int = 16,
    ) -> None:
        if not callable(model):
            raise TypeError(
                f"model must be a callable cache-aware model, got {type(model).__name__}"
            )
        self.context_length = checks.positive_int("context_length", context_length)
        checks.positive_int("num_blocks", num_blocks)
        checks.positive_int("block_size", block_size)
        checks.positive_int("max_num_batched_tokens", max_num_batched_tokens)
        checks.positive_int("max_num_seqs", max_num_seqs)
        model_context = _model_context(model)
        if model_context is not None and context_length > model_context:
            raise ValueError(
                f"context_length {context_length} exceeds the model's own context length "
                f"{model_context}: positions past it cannot be run"
            )
        self.model = model
        self._shape = _probe(model)
        # The pool checks its bytes against the device's memory before allocating.
        self.cache = PagedKVCache(
            self._shape.layers,
            self._shape.kv_heads,
            self._shape.head_dim,
            num_blocks,
            block_size,
            dtype=self._shape.dtype,
            device=self._shape.device,
        )
        self._policy = Policy(
            self.cache,
            PagedNamespace("scheduler-engine", "pool"),
            max_num_batched_tokens,
            max_num_seqs,
            context_length,
        )
        self._requests: dict[Hashable, Request] = {}  # waiting or running
        self._arrivals = count()
        self._generate_calls = count()
        self._steps = 0
        self._preemptions = 0
        # Rows of a failed model call, run alone one at a time until each passes a step.
        self._suspects: list[Hashable] = []

    # ---- requests ----------------------------------------------------------------

    def add_request(
        self,
        request_id: str | int,
        prompt_ids: Sequence[int] | torch.Tensor,
        max_new_tokens: int,
        *,
        eos_token_id: int | None = None,
        temperature: float = 0.0,
        seed: int = 0,
    ) -> None:
        """Queue a request (validated first; a rejected one changes nothing)."""
        checks.request_id(request_id)
        self._add(request_id, prompt_ids, max_new_tokens, eos_token_id, temperature, seed)

    def _add(
        self,
        request_id: Hashable,
        prompt_ids: object,
        max_new_tokens: object,
        eos_token_id: object,
        temperature: object,
        seed: object,
    ) -> None:
        if request_id in self._requests:
            raise ValueError(f"request_id {request_id!r} is already waiting or running")
        prompt = checks.token_ids("prompt_ids", prompt_ids, self._shape.vocab_size)
        budget = checks.positive_int("max_new_tokens", max_new_tokens)
        eos = checks.optional_token("eos_token_id", eos_token_id, self._shape.vocab_size)
        request = Request(
            request_id,
            prompt,
            budget,
            eos,
            checks.temperature(temperature),
            checks.seed(seed),
            next(self._arrivals),
        )
        self._check_fits(request)
        self._requests[request_id] = request
        self._policy.add(request)

    def _check_fits(self, request: Request) -> None:
        total = len(request.prompt_ids) + request.max_new_tokens
        if total > self.context_length:
            raise ValueError(
                f"prompt_ids ({len(request.prompt_ids)}) + max_new_tokens "
                f"({request.max_new_tokens}) exceed the context_length {self.context_length}"
            )
        needed = -(-request.max_stored_tokens() // self.cache.block_size)
        if needed > self.cache.num_blocks:
            raise ValueError(
                f"prompt_ids + max_new_tokens need {needed} blocks of the pool's "
                f"num_blocks={self.cache.num_blocks}: the request could never run"
            )

    def has_unfinished_requests(self) -> bool:
        return bool(self._requests)

    def status(self, request_id: Hashable) -> str:
        """'waiting' or 'running' (ValueError for an id that is neither)."""
        checks.lookup_id(request_id)  # a list would fail the lookup without naming it
        request = self._requests.get(request_id)
        if request is None:
            raise ValueError(f"request_id {request_id!r} is not waiting or running")
        return request.status.value

    def abort_request(self, request_id: Hashable) -> None:
        """Drop a waiting or running request: its blocks are freed, it never emits again.

        For a request that keeps failing its steps (``StepError`` naming it alone);
        ValueError for an id that is neither waiting nor running.
        """
        checks.lookup_id(request_id)
        request = self._requests.get(request_id)
        if request is None:
            raise ValueError(f"request_id {request_id!r} is not waiting or running")
        self._policy.abort(request)
        del self._requests[request_id]
        if request_id in self._suspects:
            self._suspects.remove(request_id)

    @property
    def stats(self) -> EngineStats:
        pool = self.cache.stats
        return EngineStats(
            steps=self._steps,
            preemptions=self._preemptions,
            free_blocks=pool.free_blocks,
            cached_blocks=pool.cached_blocks,
            used_blocks=pool.used_blocks,
            num_waiting=len(self._policy.waiting),
            num_running=len(self._policy.running),
        )

    # ---- one step --------------------------------------------------------------------

    def step(self) -> StepRecord:
        """Schedule, run ONE model call over the mixed batch, sample, finish.

        All or nothing: on a failure (``StepError``, naming the requests) no request
        has advanced; the step's admissions and preemptions stand.
        """
        suspect = self._next_suspect()
        plan = self._policy.schedule(only=suspect)
        self._preemptions += len(plan.preempted)
        record = StepRecord(
            scheduled=tuple(ScheduledRow(r.request_id, k, kind) for r, k, kind in plan.rows),
            preempted=tuple(r.request_id for r in plan.preempted),
        )
        if not plan.rows:
            return record
        try:
            emitted, finished = self._run(plan)
        except StepError as error:
            self._suspect(error.request_ids)
            raise
        if suspect is not None:
            self._suspects.remove(suspect.request_id)  # it passed a step alone
        self._steps += 1
        return StepRecord(record.scheduled, record.preempted, emitted, finished)

    def _next_suspect(self) -> Request | None:
        """The first suspect still running (the others left: finished, aborted, preempted)."""
        while self._suspects:
            request = self._requests.get(self._suspects[0])
            if request is not None and request in self._policy.running:
                return request
            self._suspects.pop(0)
        return None

    def _suspect(self, request_ids: Sequence[Hashable]) -> None:
        for request_id in request_ids:
            if request_id not in self._suspects:
                self._suspects.append(request_id)

    def _run(self, plan: StepPlan) -> tuple[dict[Hashable, int], tuple[Hashable, ...]]:
        """Compute, draw, then commit: nothing changes unless all of it succeeded."""
        rows = []
        for request, tokens, _ in plan.rows:
            first = request.num_computed
            rows.append((request.all_tokens[first : first + tokens], first))
        ids = [request.request_id for request, _, _ in plan.rows]
        staged = StagedWrites()
        try:
            logits_RV = forward_mixed_batch(self.model, self.cache, ids, rows, staged=staged)
        except BaseException as error:
            staged.abort()
            if not isinstance(error, Exception):
                raise  # KeyboardInterrupt and the like: nothing changed, passed on as is
            raise StepError(
                f"the model call failed for request_ids {ids}: {type(error).__name__}: {error}",
                ids,
            ) from error
        drawn = self._draw(plan, logits_RV, staged)
        try:
            staged.commit()
        except BaseException as error:
            staged.abort()
            _restore_generators(drawn)
            if not isinstance(error, Exception):
                raise
            raise StepError(
                f"storing the K/V failed for request_ids {ids}: {error}", ids
            ) from error
        return self._advance(drawn)

    def _draw(
        self, plan: StepPlan, logits_RV: torch.Tensor, staged: StagedWrites
    ) -> list[tuple[Request, int, int | None, torch.Tensor | None]]:
        """(request, tokens, drawn token or None, generator state before) per row.

        A failed draw restores every generator drawn from and aborts the K/V.
        """
        drawn: list[tuple[Request, int, int | None, torch.Tensor | None]] = []
        greedy: list[int] | None = None  # the step's argmaxes, drawn at the first greedy row
        for row, (request, tokens, _) in enumerate(plan.rows):
            if request.remaining > tokens:
                drawn.append((request, tokens, None, None))
                continue  # a prefill chunk short of the end: its logits are not needed
            state = request.generator.get_state() if request.temperature > 0 else None
            try:
                if request.temperature == 0.0:
                    greedy = greedy_tokens(logits_RV) if greedy is None else greedy
                    token = greedy[row]
                else:
                    token = next_token(logits_RV[row], request)
            except BaseException as error:
                _restore_generators([*drawn, (request, tokens, None, state)])
                staged.abort()
                if not isinstance(error, Exception):
                    raise
                raise StepError(
                    f"sampling the next token of request_id {request.request_id!r} failed: "
                    f"{type(error).__name__}: {error}",
                    [request.request_id],
                ) from error
            drawn.append((request, tokens, token, state))
        return drawn

    def _advance(
        self, drawn: list[tuple[Request, int, int | None, torch.Tensor | None]]
    ) -> tuple[dict[Hashable, int], tuple[Hashable, ...]]:
        """The commit's request side: plain updates that cannot fail part-way."""
        emitted: dict[Hashable, int] = {}
        finished: list[Hashable] = []
        for request, tokens, token, _ in drawn:
            request.num_computed += tokens
            if token is None:
                continue
            request.output_ids.append(token)
            emitted[request.request_id] = token
            if request.is_finished:
                self._policy.finish(request)
                del self._requests[request.request_id]
                finished.append(request.request_id)
        return emitted, tuple(finished)

    # ---- streaming ---------------------------------------------------------------------

    def generate(
        self,
        prompts: Sequence[Sequence[int] | torch.Tensor],
        max_new_tokens: int | Sequence[int],
        *,
        eos_token_id: int | None = None,
        temperature: float = 0.0,
        seed: int = 0,
        progress: bool = False,
    ) -> Iterator[StreamOutput]:
        """Add every prompt (prompt i draws with ``seed + i``) and stream tokens as they come.

        Every prompt is validated before any is added. Requests added earlier advance
        too, but only these prompts' tokens are yielded; the iterator ends when all of
        them finished.
        """
        if isinstance(prompts, str | bytes) or not isinstance(prompts, Sequence) or not prompts:
            raise TypeError("prompts must be a non-empty sequence of token sequences")
        budgets = self._budgets(max_new_tokens, len(prompts))
        checks.seed(seed)
        call = next(self._generate_calls)
        ids = [("generate", call, index) for index in range(len(prompts))]
        self._check_batch(prompts, budgets, eos_token_id, temperature, seed)
        for index, (rid, prompt) in enumerate(zip(ids, prompts, strict=True)):
            self._add(rid, prompt, budgets[index], eos_token_id, temperature, seed + index)
        return self._stream(ids, progress)

    def _budgets(self, max_new_tokens: int | Sequence[int], n: int) -> list[int]:
        if isinstance(max_new_tokens, Sequence):
            if len(max_new_tokens) != n:
                raise ValueError(f"max_new_tokens must hold one budget per prompt ({n})")
            return list(max_new_tokens)
        return [max_new_tokens] * n

    def _check_batch(
        self,
        prompts: Sequence[object],
        budgets: list[int],
        eos_token_id: object,
        temperature: object,
        seed: int,
    ) -> None:
        """Validate every prompt as add_request would, before adding any."""
        for index, (prompt, budget) in enumerate(zip(prompts, budgets, strict=True)):
            ids = checks.token_ids(f"prompts[{index}]", prompt, self._shape.vocab_size)
            request = Request(
                -1,
                ids,
                checks.positive_int("max_new_tokens", budget),
                checks.optional_token("eos_token_id", eos_token_id, self._shape.vocab_size),
                checks.temperature(temperature),
                checks.seed(seed + index),
                -1,
            )
            self._check_fits(request)

    def _stream(self, ids: Sequence[Hashable], progress: bool) -> Iterator[StreamOutput]:
        index_of = {rid: index for index, rid in enumerate(ids)}
        pending = set(ids)
        failures: dict[Hashable, int] = {}
        with tqdm(total=len(ids), unit="req", disable=not progress, desc="generate") as bar:
            while pending:
                try:
                    record = self.step()
                except StepError as error:
                    culprit = self._isolated(error, failures)
                    if culprit is None:
                        continue
                    if culprit not in index_of:
                        raise  # someone else's request: theirs to abort
                    self.abort_request(culprit)
                    pending.discard(culprit)
                    bar.update(1)
                    yield StreamOutput(index_of[culprit], -1, True, error=str(error))
                    continue
                for rid, token in record.emitted.items():
                    if rid in index_of:
                        done = rid in record.finished
                        yield StreamOutput(index_of[rid], token, done)
                        if done:
                            pending.discard(rid)
                            bar.update(1)
                bar.set_postfix(running=self.stats.num_running, refresh=False)

    @staticmethod
    def _isolated(error: StepError, failures: dict[Hashable, int]) -> Hashable | None:
        """The request to abort: one that failed ``FAILURES_BEFORE_ABORT`` steps alone."""
        if len(error.request_ids) != 1:
            return None  # a shared model call failed: its rows are now tried one by one
        (rid,) = error.request_ids
        failures[rid] = failures.get(rid, 0) + 1
        return rid if failures[rid] >= FAILURES_BEFORE_ABORT else None


def _restore_generators(
    drawn: Sequence[tuple[Request, int, int | None, torch.Tensor | None]],
) -> None:
    """Every generator back to its state before this step's draw (the draw never happened)."""
    for request, _, _, state in drawn:
        if state is not None:
            request.generator.set_state(state)


# A request is aborted by ``generate`` after this many failed steps of its own (one
# retry: a transient fault is survived, a request that always fails is dropped).
FAILURES_BEFORE_ABORT = 2


__all__ = ["Engine", "EngineStats", "ScheduledRow", "StepError", "StepRecord", "StreamOutput"]
