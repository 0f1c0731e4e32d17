"""ONE step's decision: which requests run, with how many tokens, and who is preempted.

Under ``max_num_batched_tokens`` (the budget) and ``max_num_seqs`` (the running cap):

1. Running requests, decodes first, then partially prefilled ones, each in
   admission order: a decode takes one token, a prefill chunk
   ``min(remaining tokens, budget left)``.
2. Blocks: a row's new tokens must fit the pool's free and cached blocks (less
   what earlier rows of this step will take). A prefill chunk shrinks to what
   fits; a row that cannot get even one token preempts the most recently admitted
   running request not yet scheduled this step (itself, if that is the newest):
   its blocks are freed and it goes back to the FRONT of the waiting queue, to be
   recomputed later from its tokens (prompt + output so far).
3. Waiting requests in queue order, while budget, a running slot and at least one
   block are left: admission opens them in the pool (prefix-cache hits count as
   computed) and schedules their first chunk. The queue is never skipped (the
   head blocks the rest), and a step that preempted admits nobody.

Padding rule (``batch.py`` pads every row to the step's widest chunk W with
positions continuing each row): a chunk is also cut so that every row's
``next position + W <= context_length``.

Progress: the oldest running request is never the victim while anything newer
runs, and everything after it waits behind it, so every request finishes.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from paged_kv import PagedKVCache, PagedNamespace

from .request import Request, RequestStatus


def _blocks(tokens: int, block_size: int) -> int:
    return -(-tokens // block_size)


@dataclass
class StepPlan:
    """The rows of one model call, in row order, and who was preempted to make room."""

    rows: list[tuple[Request, int, str]] = field(default_factory=list)  # (request, tokens, kind)
    preempted: list[Request] = field(default_factory=list)


class _StepBudget:
    """What is left of one step: tokens, blocks, and the padding headroom."""

    def __init__(self, cache: PagedKVCache, tokens: int, context_length: int) -> None:
        self.cache = cache
        self.tokens = tokens
        self.planned_blocks = 0  # blocks this step's appends will take
        self.width = 0  # the widest chunk so far: every row is padded to it
        self.headroom = context_length  # min over rows of context_length - next position
        self.context_length = context_length

    @property
    def blocks(self) -> int:
        stats = self.cache.stats
        return stats.free_blocks + stats.cached_blocks - self.planned_blocks

    def limit(self, request: Request, wanted: int) -> int:
        """How many of ``wanted`` next tokens the token budget and the padding allow."""
        if request.num_computed + self.width > self.context_length:
            return 0  # padded to this step's width, the row would leave the context
        return max(0, min(wanted, self.tokens, self.headroom))

    def block_room(self, request: Request) -> int:
        """How many next tokens of the request the blocks left can hold."""
        bs = self.cache.block_size
        n = request.num_computed
        slack = _blocks(n, bs) * bs - n  # room left in the row's last block
        return slack + max(self.blocks, 0) * bs

    def take(self, request: Request, tokens: int) -> None:
        bs = self.cache.block_size
        n = request.num_computed
        self.tokens -= tokens
        self.planned_blocks += _blocks(n + tokens, bs) - _blocks(n, bs)
        self.width = max(self.width, tokens)
        self.headroom = min(self.headroom, self.context_length - n)


class Policy:
    """The waiting queue, the running set (admission order), and the step decision."""

    def __init__(
        self,
        cache: PagedKVCache,
        namespace: PagedNamespace,
        max_num_batched_tokens: int,
        max_num_seqs: int,
        context_length: int,
    ) -> None:
        self.cache = cache
        self.namespace = namespace
        self.max_num_batched_tokens = max_num_batched_tokens
        self.max_num_seqs = max_num_seqs
        self.context_length = context_length
        self.waiting: deque[Request] = deque()
        self.running: list[Request] = []  # oldest admission first

    def add(self, request: Request) -> None:
        self.waiting.append(request)

    def finish(self, request: Request) -> None:
        """A finished request leaves the running set; its blocks are freed (full ones cached)."""
        request.status = RequestStatus.FINISHED
        self.running.remove(request)
        self.cache.free(request.request_id)

    def abort(self, request: Request) -> None:
        """Drop a waiting or running request (its blocks freed, full ones cached)."""
        if request.status is RequestStatus.RUNNING:
            self.running.remove(request)
            self.cache.free(request.request_id)
        else:
            self.waiting.remove(request)
        request.status = RequestStatus.FINISHED

    def schedule(self, only: Request | None = None) -> StepPlan:
        """One step's rows; ``only``: that running request alone (isolating a failure)."""
        plan = StepPlan()
        budget = _StepBudget(self.cache, self.max_num_batched_tokens, self.context_length)
        scheduled: set[int] = set()  # id() of requests with a row this step
        decodes_first = sorted(self.running, key=lambda r: not r.is_decode)  # stable
        if only is not None:
            decodes_first = [only]
        for request in decodes_first:
            if budget.tokens == 0:
                break
            if request.status is not RequestStatus.RUNNING:
                continue  # preempted earlier in this step
            tokens = budget.limit(request, 1 if request.is_decode else request.remaining)
            if tokens == 0:
                continue  # the padding would leave the context: next step
            while budget.block_room(request) == 0:
                victim = self._newest_unscheduled(scheduled)
                self._preempt(victim)
                plan.preempted.append(victim)
                if victim is request:
                    break
            tokens = min(tokens, budget.block_room(request))
            if request.status is RequestStatus.RUNNING and tokens > 0:
                self._schedule(plan, budget, request, tokens)
                scheduled.add(id(request))
        if not plan.preempted and only is None:
            self._admit_waiting(plan, budget)
        return plan

    def _admit_waiting(self, plan: StepPlan, budget: _StepBudget) -> None:
        while self.waiting and budget.tokens > 0 and len(self.running) < self.max_num_seqs:
            if budget.blocks <= 0:
                return
            request = self.waiting[0]
            reused = self.cache.admit(request.request_id, request.all_tokens, self.namespace)
            request.num_computed = reused
            tokens = min(budget.limit(request, request.remaining), budget.block_room(request))
            if tokens == 0:
                # The prefix hit took the last blocks left, or padding would leave the
                # context: undo the admission (its reused blocks are cached again).
                self.cache.free(request.request_id)
                request.num_computed = 0
                return
            self.waiting.popleft()
            request.status = RequestStatus.RUNNING
            self.running.append(request)
            self._schedule(plan, budget, request, tokens)

    def _schedule(self, plan: StepPlan, budget: _StepBudget, request: Request, tokens: int) -> None:
        kind = "decode" if request.is_decode else "prefill"
        plan.rows.append((request, tokens, kind))
        budget.take(request, tokens)

    def _newest_unscheduled(self, scheduled: set[int]) -> Request:
        for request in reversed(self.running):
            if id(request) not in scheduled:
                return request
        raise AssertionError("the request asking for blocks is itself unscheduled")

    def _preempt(self, request: Request) -> None:
        """Free every block; back to the front of the queue, recomputed from its tokens."""
        self.cache.free(request.request_id)
        self.running.remove(request)
        request.num_computed = 0
        request.status = RequestStatus.WAITING
        self.waiting.appendleft(request)
