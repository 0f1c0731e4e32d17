"""A stranger's scheduler written from packages/scheduler/README.md's Contract alone.

Different internals on purpose: one flat slot pool per layer (`[num_blocks * block_size,
H, D]`, a request's slots found through its plain list of block ids), reference counts
in a list, prefix blocks keyed by the exact token prefix (a tuple, no digest) and
published only when a request lets its blocks go, recency by an insertion-ordered dict;
blocks are taken while the step is decided and the extras handed back after the
padding cut; per-row python loops to gather and scatter K/V around ONE model call
over right-padded rows; everything runs under torch.inference_mode(); its own
validation order and its own result classes.
"""

VARIABLE = "SCHEDULER_MODULE"  # graded through this variable by `nox -s known_bad`

import math
from collections import deque
from dataclasses import dataclass, field

import torch


def _size(name, value):
    if type(value) is not int or value < 1:
        raise ValueError(f"{name}: expected an int >= 1, got {value!r}")
    return value


@dataclass(frozen=True)
class Row:
    request_id: object
    num_tokens: int
    kind: str


@dataclass
class StepResult:
    scheduled: list = field(default_factory=list)
    preempted: list = field(default_factory=list)
    emitted: dict = field(default_factory=dict)
    finished: list = field(default_factory=list)


@dataclass(frozen=True)
class Snapshot:
    steps: int
    preemptions: int
    free_blocks: int
    cached_blocks: int
    used_blocks: int
    num_waiting: int
    num_running: int


@dataclass(frozen=True)
class Item:
    index: int
    token_id: int
    finished: bool


class _Req:
    def __init__(self, rid, prompt, max_new, eos, temperature, seed):
        self.rid, self.prompt, self.max_new, self.eos = rid, prompt, max_new, eos
        self.temperature = temperature
        self.gen = torch.Generator().manual_seed(seed) if temperature > 0 else None
        self.out = []
        self.blocks = []  # block ids, slot s of the request lives in blocks[s // bs]
        self.done = 0  # tokens whose K/V are in the pool

    @property
    def tokens(self):
        return self.prompt + self.out


class _Pool:
    """Blocks with counts; released full blocks stay findable by their token prefix."""

    def __init__(self, n):
        self.n = n
        self.count = [0] * n
        self.free = list(range(n - 1, -1, -1))  # pop() hands out block 0 first
        self.by_prefix = {}  # token prefix tuple -> block
        self.prefix_of = {}  # block -> its key
        self.idle = {}  # cached blocks (count 0, findable), oldest first

    def available(self):
        return len(self.free) + len(self.idle)

    def take(self):
        if self.free:
            block = self.free.pop()
        else:
            block = next(iter(self.idle))
            del self.idle[block]
            del self.by_prefix[self.prefix_of.pop(block)]
        self.count[block] = 1
        return block

    def hold(self, block):
        if self.count[block] == 0:
            del self.idle[block]
        self.count[block] += 1

    def drop(self, block, key):
        self.count[block] -= 1
        if key is not None and key not in self.by_prefix and block not in self.prefix_of:
            self.by_prefix[key] = block
            self.prefix_of[block] = key
        if self.count[block] == 0:
            if block in self.prefix_of:
                self.idle[block] = None
            else:
                self.free.append(block)


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
        self.max_num_seqs = _size("max_num_seqs", max_num_seqs)
        self.budget = _size("max_num_batched_tokens", max_num_batched_tokens)
        self.bs = _size("block_size", block_size)
        self.num_blocks = _size("num_blocks", num_blocks)
        self.ctx = _size("context_length", context_length)
        self.model = model
        with torch.inference_mode():
            probe = model(
                torch.zeros(1, 1, dtype=torch.long, device=self._device()),
                torch.zeros(1, 1, dtype=torch.long, device=self._device()),
                use_cache=True,
            )
            key = probe.past_key_values[0][0]
            self.vocab = probe.logits.shape[-1]
            self.layers = len(probe.past_key_values)
            self.heads, self.dim = key.shape[1], key.shape[3]
            slots = self.num_blocks * self.bs
            self.k_pool = [
                torch.zeros(slots, self.heads, self.dim, dtype=key.dtype, device=key.device)
                for _ in range(self.layers)
            ]
            self.v_pool = [torch.zeros_like(t) for t in self.k_pool]
        self.device = key.device
        self.pool = _Pool(self.num_blocks)
        self.waiting = deque()
        self.running = []  # admission order, oldest first
        self.live = {}
        self.steps = 0
        self.preemptions = 0

    def _device(self):
        return next(self.model.parameters()).device

    # ---- requests -------------------------------------------------------------------

    def _prompt(self, name, prompt_ids):
        if isinstance(prompt_ids, torch.Tensor):
            if prompt_ids.dtype.is_floating_point or prompt_ids.dtype in (
                torch.bool,
                torch.complex64,
                torch.complex128,
            ):
                raise TypeError(f"{name}: expected an integer tensor, got {prompt_ids.dtype}")
            if prompt_ids.dim() == 2 and prompt_ids.shape[0] == 1:
                prompt_ids = prompt_ids[0]
            if prompt_ids.dim() != 1:
                raise ValueError(f"{name}: expected a [T] or [1, T] tensor")
            tokens = [int(t) for t in prompt_ids.tolist()]
        elif isinstance(prompt_ids, (list, tuple, range)):
            tokens = list(prompt_ids)
            if any(type(t) is not int for t in tokens):
                raise TypeError(f"{name}: every token id must be an int")
        else:
            raise TypeError(f"{name}: expected a sequence of ints or a tensor")
        if not tokens:
            raise ValueError(f"{name}: must not be empty")
        if min(tokens) < 0 or max(tokens) >= self.vocab:
            raise ValueError(f"{name}: token ids must lie in [0, {self.vocab})")
        return tokens

    def _check(self, prompt_ids, max_new_tokens, eos_token_id, temperature, seed, name):
        if type(seed) is not int or seed < 0:
            raise ValueError(f"seed: expected an int >= 0, got {seed!r}")
        if type(temperature) not in (int, float) or not math.isfinite(temperature):
            raise ValueError(f"temperature: expected a finite float, got {temperature!r}")
        if temperature < 0:
            raise ValueError(f"temperature: must be >= 0, got {temperature}")
        if eos_token_id is not None and (
            type(eos_token_id) is not int or not 0 <= eos_token_id < self.vocab
        ):
            raise ValueError(f"eos_token_id: expected None or an int in [0, {self.vocab})")
        if type(max_new_tokens) is not int or max_new_tokens < 1:
            raise ValueError(f"max_new_tokens: expected an int >= 1, got {max_new_tokens!r}")
        tokens = self._prompt(name, prompt_ids)
        total = len(tokens) + max_new_tokens
        if total > self.ctx:
            raise ValueError(
                f"max_new_tokens: prompt + output ({total}) exceeds context_length {self.ctx}"
            )
        if -(-(total - 1) // self.bs) > self.num_blocks:
            raise ValueError(f"max_new_tokens: the request alone needs more than {self.num_blocks}")
        return tokens

    def _enqueue(self, rid, tokens, max_new, eos, temperature, seed):
        req = _Req(rid, tokens, max_new, eos, float(temperature), seed)
        self.live[rid] = req
        self.waiting.append(req)

    def add_request(
        self, request_id, prompt_ids, max_new_tokens, *, eos_token_id=None, temperature=0.0, seed=0
    ):
        tokens = self._check(
            prompt_ids, max_new_tokens, eos_token_id, temperature, seed, "prompt_ids"
        )
        if type(request_id) not in (int, str):
            raise TypeError(f"request_id: expected a str or an int, got {request_id!r}")
        if request_id in self.live:
            raise ValueError(f"request_id: {request_id!r} is already waiting or running")
        self._enqueue(request_id, tokens, max_new_tokens, eos_token_id, temperature, seed)

    def has_unfinished_requests(self):
        return bool(self.live)

    def status(self, request_id):
        req = self.live.get(request_id) if isinstance(request_id, (int, str)) else None
        if req is None:
            raise ValueError(f"request_id: {request_id!r} is neither waiting nor running")
        return "running" if req in self.running else "waiting"

    @property
    def stats(self):
        cached = len(self.pool.idle)
        free = len(self.pool.free)
        return Snapshot(
            self.steps,
            self.preemptions,
            free,
            cached,
            self.num_blocks - free - cached,
            len(self.waiting),
            len(self.running),
        )

    # ---- blocks -----------------------------------------------------------------------

    def _release(self, req):
        full = req.done // self.bs
        for i, block in enumerate(req.blocks):
            key = tuple(req.tokens[: (i + 1) * self.bs]) if i < full else None
            self.pool.drop(block, key)
        req.blocks = []

    def _room(self, req, k):
        """How many of k more tokens fit in the request's blocks plus the pool's spare ones."""
        return min(k, (len(req.blocks) + self.pool.available()) * self.bs - req.done)

    def _grow(self, req, k):
        while len(req.blocks) * self.bs < req.done + k:
            req.blocks.append(self.pool.take())

    def _shrink(self, req, k):
        while len(req.blocks) > -(-(req.done + k) // self.bs):
            self.pool.drop(req.blocks.pop(), None)

    def _hits(self, tokens):
        cap = self.bs * ((len(tokens) - 1) // self.bs)
        found = []
        for end in range(self.bs, cap + 1, self.bs):
            block = self.pool.by_prefix.get(tuple(tokens[:end]))
            if block is None:
                break
            found.append(block)
        return found

    # ---- one step ---------------------------------------------------------------------

    def _preempt(self, victim, result):
        self._release(victim)
        victim.done = 0
        self.running.remove(victim)
        self.waiting.appendleft(victim)
        self.preemptions += 1
        result.preempted.append(victim.rid)

    def _decide(self, result):
        left = self.budget
        plan = {}  # request -> tokens this step (insertion order = row order)
        ready = [r for r in self.running if r.done == len(r.tokens) - 1 and r.out]
        partial = [r for r in self.running if r not in ready]
        for req in ready + partial:
            if left == 0:
                break
            if req not in self.running:
                continue  # preempted earlier in this step
            want = min(len(req.tokens) - req.done, left)
            while self._room(req, want) < 1:
                victim = [r for r in self.running if r not in plan][-1]
                self._preempt(victim, result)
                if victim is req:
                    break
            if req not in self.running:
                continue
            k = self._room(req, want)
            self._grow(req, k)
            plan[req] = k
            left -= k
        while (
            self.waiting
            and left > 0
            and not result.preempted
            and len(self.running) < self.max_num_seqs
        ):
            head = self.waiting[0]
            hits = self._hits(head.tokens)
            idle_hits = sum(self.pool.count[b] == 0 for b in hits)
            if self.pool.available() - idle_hits < 1:
                break
            self.waiting.popleft()
            for block in hits:
                self.pool.hold(block)
            head.blocks, head.done = hits, len(hits) * self.bs
            self.running.append(head)
            k = self._room(head, min(len(head.tokens) - head.done, left))
            self._grow(head, k)
            plan[head] = k
            left -= k
        # Padding rule: the widest row must not push any row past the context.
        widest = min((self.ctx - req.done for req in plan), default=0)
        for req, k in plan.items():
            if k > widest:
                plan[req] = widest
                self._shrink(req, widest)
        return plan

    def _forward(self, plan):
        reqs = list(plan)
        width = max(plan.values())
        lengths = [r.done for r in reqs]
        longest = max(lengths)
        ids = torch.zeros(len(reqs), width, dtype=torch.long)
        for row, req in enumerate(reqs):
            chunk = req.tokens[req.done : req.done + plan[req]]
            ids[row, : len(chunk)] = torch.tensor(chunk)
        positions = torch.tensor(lengths)[:, None] + torch.arange(width)[None, :]
        kwargs = {}
        if longest > 0:
            past = []
            for layer in range(self.layers):
                shape = (len(reqs), self.heads, longest, self.dim)
                keys = torch.zeros(shape, dtype=self.k_pool[0].dtype, device=self.device)
                values = torch.zeros_like(keys)
                for row, req in enumerate(reqs):
                    slots = self._slots(req, 0, req.done)
                    keys[row, :, : req.done] = self.k_pool[layer][slots].transpose(0, 1)
                    values[row, :, : req.done] = self.v_pool[layer][slots].transpose(0, 1)
                past.append((keys, values))
            kwargs = {
                "past_key_values": tuple(past),
                "cache_lengths": torch.tensor(lengths, device=self.device),
                "cache_start_positions": torch.zeros(
                    len(reqs), dtype=torch.long, device=self.device
                ),
            }
        out = self.model(ids.to(self.device), positions.to(self.device), use_cache=True, **kwargs)
        for layer, (keys, values) in enumerate(out.past_key_values):
            for row, req in enumerate(reqs):
                slots = self._slots(req, req.done, req.done + plan[req])
                span = slice(req.done, req.done + plan[req])
                self.k_pool[layer][slots] = keys[row, :, span].transpose(0, 1)
                self.v_pool[layer][slots] = values[row, :, span].transpose(0, 1)
        return {req: out.logits[row, plan[req] - 1] for row, req in enumerate(reqs)}

    def _slots(self, req, first, stop):
        return torch.tensor(
            [req.blocks[s // self.bs] * self.bs + s % self.bs for s in range(first, stop)],
            dtype=torch.long,
            device=self.device,
        )

    def _sample(self, req, logits):
        if req.gen is None:
            return int(torch.argmax(logits))
        probs = torch.softmax(logits.float().cpu() / req.temperature, dim=-1)
        return int(torch.multinomial(probs, 1, generator=req.gen))

    def step(self):
        result = StepResult()
        with torch.inference_mode():
            plan = self._decide(result)
            if not plan:
                return result
            self.steps += 1
            for req, k in plan.items():
                ready = k == 1 and req.out and req.done == len(req.tokens) - 1
                result.scheduled.append(Row(req.rid, k, "decode" if ready else "prefill"))
            row_logits = self._forward(plan)
        for req, k in plan.items():
            req.done += k
            if req.done < len(req.tokens):
                continue
            token = self._sample(req, row_logits[req])
            req.out.append(token)
            result.emitted[req.rid] = token
            if token == req.eos or len(req.out) == req.max_new:
                result.finished.append(req.rid)
                self._release(req)
                self.running.remove(req)
                del self.live[req.rid]
        return result

    # ---- streaming ----------------------------------------------------------------------

    def generate(
        self,
        prompts,
        max_new_tokens,
        *,
        eos_token_id=None,
        temperature=0.0,
        seed=0,
        progress=False,
    ):
        if isinstance(prompts, (str, bytes)) or not hasattr(prompts, "__len__"):
            raise TypeError("prompts: expected a sequence of prompts")
        budgets = max_new_tokens
        if isinstance(max_new_tokens, (list, tuple)):
            if len(max_new_tokens) != len(prompts):
                raise ValueError("max_new_tokens: one per prompt expected")
        else:
            budgets = [max_new_tokens] * len(prompts)
        if type(seed) is not int or seed < 0:
            raise ValueError(f"seed: expected an int >= 0, got {seed!r}")
        checked = [
            self._check(p, n, eos_token_id, temperature, seed + i, f"prompts[{i}]")
            for i, (p, n) in enumerate(zip(prompts, budgets, strict=True))
        ]
        keys = [("generate", id(self), object()) for _ in checked]
        for i, (key, tokens) in enumerate(zip(keys, checked, strict=True)):
            self._enqueue(key, tokens, budgets[i], eos_token_id, temperature, seed + i)
        return self._stream(keys, sum(budgets), progress)

    def _stream(self, keys, total, progress):
        index = {key: i for i, key in enumerate(keys)}
        pending = set(keys)
        bar = None
        if progress:
            try:
                from tqdm import tqdm

                bar = tqdm(total=total, unit="tok")
            except ImportError:
                bar = None
        try:
            while pending:
                result = self.step()
                for key, token in result.emitted.items():
                    if key in index:
                        done = key in result.finished
                        if done:
                            pending.discard(key)
                        if bar is not None:
                            bar.update(1)
                        yield Item(index[key], token, done)
        finally:
            if bar is not None:
                bar.close()
