"""A second stranger's scheduler, from packages/scheduler/README.md's Contract alone.

Unlike the reference and good_scheduler_flat_slots on purpose: the waiting queue is a
heap keyed by (place, arrival), a preempted request taking a place before every other;
K/V live in `paged_kv`'s public PagedKVCache (admit / append / free / model_inputs), not
in a pool of its own, so prefix hits are paged_kv's; each step is ONE plain forward over
right-padded rows, the rows' new K/V written back one paged append per chunk width;
records, rows, stats and stream items are named tuples; messages are prose ("max new
tokens must be an int >= 1, got 0"), never a parameter's identifier; grad is off under
torch.no_grad() instead of inference mode.
"""

VARIABLE = "SCHEDULER_MODULE"  # graded through this variable by `nox -s known_bad`

import heapq
import itertools
import math
from typing import NamedTuple

import torch

from paged_kv import PagedKVCache, PagedNamespace


class Row(NamedTuple):
    request_id: object
    num_tokens: int
    kind: str


class Record(NamedTuple):
    scheduled: tuple
    preempted: tuple
    emitted: dict
    finished: tuple


class Stats(NamedTuple):
    steps: int
    preemptions: int
    free_blocks: int
    cached_blocks: int
    used_blocks: int
    num_waiting: int
    num_running: int


class Item(NamedTuple):
    index: int
    token_id: int
    finished: bool


def _whole(value):
    return isinstance(value, int) and not isinstance(value, bool)


class _Request:
    def __init__(self, rid, prompt, budget, eos, temperature, seed):
        self.rid = rid
        self.prompt = prompt
        self.budget = budget
        self.eos = eos
        self.temperature = float(temperature)
        self.generator = torch.Generator().manual_seed(seed)
        self.output = []
        self.computed = 0  # tokens whose K/V the cache stores
        self.paged_id = None  # its id in the paged cache while running
        self.admitted = 0  # admission serial (order among running requests)

    @property
    def tokens(self):
        return self.prompt + self.output

    @property
    def decode_ready(self):
        return bool(self.output) and self.computed == len(self.tokens) - 1


class Engine:
    def __init__(
        self,
        model,
        *,
        context_length,
        num_blocks,
        block_size=16,
        max_num_batched_tokens=256,
        max_num_seqs=16,
    ):
        sizes = {
            "the context length": context_length,
            "the number of blocks": num_blocks,
            "the block size": block_size,
            "the token budget (max num batched tokens)": max_num_batched_tokens,
            "the sequence cap (max num seqs)": max_num_seqs,
        }
        for words, value in sizes.items():
            if not _whole(value) or value < 1:
                raise ValueError(f"{words} must be an int >= 1, got {value!r}")
        self.model = model
        self.context = context_length
        self.block_size = block_size
        self.num_blocks = num_blocks
        self.token_budget = max_num_batched_tokens
        self.seq_cap = max_num_seqs
        self.device = next(model.parameters()).device
        with torch.no_grad():
            zero = torch.zeros(1, 1, dtype=torch.long, device=self.device)
            probe = model(zero, zero, use_cache=True)
        key = probe.past_key_values[0][0]
        self.vocab = probe.logits.shape[-1]
        self.cache = PagedKVCache(
            len(probe.past_key_values), key.shape[1], key.shape[3], num_blocks, block_size,
            dtype=key.dtype, device=key.device,
        )  # fmt: skip
        self.namespace = PagedNamespace("heap-engine", "one")
        self.heap = []  # (place, serial, request)
        self.front = itertools.count(-1, -1)  # preempted requests: before everyone
        self.back = itertools.count(1)
        self.serial = itertools.count()
        self.running = []
        self.known = {}  # waiting or running request id -> request
        self.steps = self.preemptions = 0

    # ---- requests ---------------------------------------------------------------------

    def _prompt(self, prompt_ids, what):
        if isinstance(prompt_ids, torch.Tensor):
            if (
                prompt_ids.is_floating_point()
                or prompt_ids.is_complex()
                or prompt_ids.dtype == torch.bool
            ):
                raise TypeError(f"{what} must hold integer token ids, got {prompt_ids.dtype}")
            if prompt_ids.dim() == 2 and prompt_ids.shape[0] == 1:
                prompt_ids = prompt_ids[0]
            if prompt_ids.dim() != 1:
                raise ValueError(f"{what} must be [T] or [1, T], got {tuple(prompt_ids.shape)}")
            tokens = prompt_ids.tolist()
        elif isinstance(prompt_ids, list | tuple | range):
            tokens = list(prompt_ids)
        else:
            raise TypeError(f"{what} must be a sequence of token ids, got {prompt_ids!r}")
        if not tokens:
            raise ValueError(f"{what} must not be empty")
        for token in tokens:
            if not _whole(token):
                raise TypeError(f"{what}: token {token!r} is not an int")
            if not 0 <= token < self.vocab:
                raise ValueError(f"{what}: token {token} is outside the vocabulary of {self.vocab}")
        return tokens

    def _validated(self, prompt_ids, max_new_tokens, eos_token_id, temperature, seed, what):
        tokens = self._prompt(prompt_ids, what)
        if not _whole(max_new_tokens) or max_new_tokens < 1:
            raise ValueError(f"max new tokens must be an int >= 1, got {max_new_tokens!r}")
        if eos_token_id is not None and (
            not _whole(eos_token_id) or not 0 <= eos_token_id < self.vocab
        ):
            raise ValueError(f"the eos token id must be None or a token id, got {eos_token_id!r}")
        if isinstance(temperature, bool) or not isinstance(temperature, int | float):
            raise TypeError(f"the temperature must be a float, got {temperature!r}")
        if not math.isfinite(temperature) or temperature < 0:
            raise ValueError(f"the temperature must be finite and >= 0, got {temperature!r}")
        if not _whole(seed) or seed < 0:
            raise ValueError(f"the seed must be an int >= 0, got {seed!r}")
        total = len(tokens) + max_new_tokens
        if total > self.context:
            raise ValueError(
                f"prompt ({len(tokens)}) + max new tokens ({max_new_tokens}) exceed the context length {self.context}"
            )
        if -(-(total - 1) // self.block_size) > self.num_blocks:
            raise ValueError(
                f"prompt + max new tokens ({total}) would need more than the {self.num_blocks} blocks"
            )
        return tokens

    def _enqueue(self, rid, tokens, budget, eos, temperature, seed):
        request = _Request(rid, tokens, budget, eos, temperature, seed)
        self.known[rid] = request
        heapq.heappush(self.heap, (next(self.back), next(self.serial), request))

    def add_request(
        self, request_id, prompt_ids, max_new_tokens, *, eos_token_id=None, temperature=0.0, seed=0
    ):
        if isinstance(request_id, bool) or not isinstance(request_id, str | int):
            raise TypeError(f"a request id is a str or an int, got {request_id!r}")
        if request_id in self.known:
            raise ValueError(f"request id {request_id!r} is already {self.status(request_id)}")
        tokens = self._validated(
            prompt_ids, max_new_tokens, eos_token_id, temperature, seed, "the prompt ids"
        )
        self._enqueue(request_id, tokens, max_new_tokens, eos_token_id, temperature, seed)

    def has_unfinished_requests(self):
        return bool(self.known)

    def status(self, request_id):
        try:
            request = self.known[request_id]
        except (KeyError, TypeError):
            raise ValueError(f"request id {request_id!r} is neither waiting nor running") from None
        return "running" if request in self.running else "waiting"

    @property
    def stats(self):
        pool = self.cache.stats
        return Stats(
            self.steps, self.preemptions, pool.free_blocks, pool.cached_blocks, pool.used_blocks,
            len(self.heap), len(self.running),
        )  # fmt: skip

    # ---- blocks -----------------------------------------------------------------------

    def _blocks_held(self, request):
        return len(self.cache.block_table(request.paged_id)) if request.paged_id is not None else 0

    def _spare_blocks(self, reserved):
        pool = self.cache.stats
        return pool.free_blocks + pool.cached_blocks - reserved

    def _fits(self, request, wanted, reserved):
        """How many of `wanted` next tokens its blocks plus the spare ones hold."""
        room = (self._blocks_held(request) + self._spare_blocks(reserved)) * self.block_size
        return max(0, min(wanted, room - request.computed))

    def _more_blocks(self, request, count):
        return -(-(request.computed + count) // self.block_size) - self._blocks_held(request)

    def _release(self, request):
        if request.paged_id is not None:
            self.cache.free(request.paged_id)
        request.paged_id = None
        request.computed = 0

    def _preempt(self, victim, preempted):
        self._release(victim)
        self.running.remove(victim)
        heapq.heappush(self.heap, (next(self.front), next(self.serial), victim))
        self.preemptions += 1
        preempted.append(victim.rid)

    def _admit(self, request):
        request.paged_id = f"run-{next(self.serial)}"
        request.computed = self.cache.admit(request.paged_id, request.tokens, self.namespace)
        request.admitted = next(self.serial)

    # ---- one decision -----------------------------------------------------------------

    def _decide(self, preempted):
        left, reserved, plan = self.token_budget, 0, {}
        order = sorted(self.running, key=lambda r: (not r.decode_ready, r.admitted))
        for request in order:
            if left == 0 or len(plan) == self.seq_cap:
                break
            if request not in self.running:
                continue  # preempted for someone older in this step
            wanted = min(len(request.tokens) - request.computed, left)
            while self._fits(request, wanted, reserved) < 1:
                victim = max((r for r in self.running if r not in plan), key=lambda r: r.admitted)
                self._preempt(victim, preempted)
                if victim is request:
                    break
            if request not in self.running:
                continue
            count = self._fits(request, wanted, reserved)
            reserved += max(0, self._more_blocks(request, count))
            plan[request] = count
            left -= count
        while self.heap and left > 0 and not preempted and len(self.running) < self.seq_cap:
            head = self.heap[0][2]
            self._admit(head)
            wanted = min(len(head.tokens) - head.computed, left)
            count = self._fits(head, wanted, reserved)
            if count < 1:
                self._release(head)  # not admitted: the pool cannot hold its first chunk
                break
            heapq.heappop(self.heap)
            self.running.append(head)
            reserved += max(0, self._more_blocks(head, count))
            plan[head] = count
            left -= count
        # Right-padded rows: every row's next position + the widest chunk stays in context.
        widest = min((self.context - r.computed for r in plan), default=0)
        return {r: min(count, widest) for r, count in plan.items() if min(count, widest) > 0}

    # ---- one model call -----------------------------------------------------------------

    def _forward(self, plan):
        requests = list(plan)
        width = max(plan.values())
        ids = torch.zeros(len(requests), width, dtype=torch.long)
        for row, request in enumerate(requests):
            chunk = request.tokens[request.computed : request.computed + plan[request]]
            ids[row, : len(chunk)] = torch.tensor(chunk)
        lengths = torch.tensor([r.computed for r in requests], dtype=torch.long)
        positions = lengths[:, None] + torch.arange(width)[None, :]
        past, cache_lengths, starts = self.cache.model_inputs([r.paged_id for r in requests])
        extra = {}
        if past is not None:
            extra = {
                "past_key_values": past,
                "cache_lengths": cache_lengths,
                "cache_start_positions": starts,
            }
        out = self.model(ids.to(self.device), positions.to(self.device), use_cache=True, **extra)
        self._store(requests, plan, ids, positions, out.past_key_values)
        return {r: out.logits[row, plan[r] - 1] for row, r in enumerate(requests)}

    def _store(self, requests, plan, ids, positions, new_past):
        """One paged append per chunk width: a row's new K/V sit after its cached ones."""
        widths = {}
        for row, request in enumerate(requests):
            widths.setdefault(plan[request], []).append(row)
        for count, rows in widths.items():
            layers = []
            for key, value in new_past:
                parts = [(key[row, :, requests[row].computed : requests[row].computed + count],
                          value[row, :, requests[row].computed : requests[row].computed + count])
                         for row in rows]  # fmt: skip
                layers.append(
                    (torch.stack([k for k, _ in parts]), torch.stack([v for _, v in parts]))
                )
            self.cache.append(
                [requests[row].paged_id for row in rows],
                ids[rows, :count].to(self.device),
                positions[rows, :count].to(self.device),
                tuple(layers),
            )

    def _sample(self, request, logits):
        if request.temperature == 0:
            return int(torch.argmax(logits))
        probs = torch.softmax(logits.float().cpu() / request.temperature, dim=-1)
        return int(torch.multinomial(probs, 1, generator=request.generator))

    def step(self):
        preempted, emitted, finished = [], {}, []
        with torch.no_grad():
            plan = self._decide(preempted)
            if not plan:
                return Record((), tuple(preempted), emitted, ())
            rows = tuple(
                Row(r.rid, count, "decode" if count == 1 and r.decode_ready else "prefill")
                for r, count in plan.items()
            )
            logits = self._forward(plan)
        self.steps += 1
        for request, count in plan.items():
            request.computed += count
            if request.computed < len(request.tokens):
                continue
            token = self._sample(request, logits[request])
            request.output.append(token)
            emitted[request.rid] = token
            if token == request.eos or len(request.output) == request.budget:
                finished.append(request.rid)
                self._release(request)
                self.running.remove(request)
                del self.known[request.rid]
        return Record(rows, tuple(preempted), emitted, tuple(finished))

    # ---- streaming ----------------------------------------------------------------------

    def generate(
        self, prompts, max_new_tokens, *, eos_token_id=None, temperature=0.0, seed=0, progress=False
    ):
        prompts = list(prompts)
        if isinstance(max_new_tokens, list | tuple):
            budgets = list(max_new_tokens)
            if len(budgets) != len(prompts):
                raise ValueError(
                    f"max new tokens: {len(budgets)} budgets for {len(prompts)} prompts"
                )
        else:
            budgets = [max_new_tokens] * len(prompts)
        if not _whole(seed) or seed < 0:
            raise ValueError(f"the seed must be an int >= 0, got {seed!r}")
        checked = [
            self._validated(p, n, eos_token_id, temperature, seed + i, f"prompt {i}")
            for i, (p, n) in enumerate(zip(prompts, budgets))
        ]
        keys = [("generate", next(self.serial)) for _ in checked]
        for i, key in enumerate(keys):
            self._enqueue(key, checked[i], budgets[i], eos_token_id, temperature, seed + i)
        return self._stream(keys, sum(budgets), progress)

    def _stream(self, keys, total, progress):
        index = {key: i for i, key in enumerate(keys)}
        bar = None
        if progress:
            from tqdm import tqdm

            bar = tqdm(total=total, unit="tok")
        try:
            while any(key in self.known for key in keys):
                record = self.step()
                for key, token in record.emitted.items():
                    if key in index:
                        if bar is not None:
                            bar.update(1)
                        yield Item(index[key], token, key in record.finished)
        finally:
            if bar is not None:
                bar.close()
