"""The slice's serving route: concurrent requests through one `Engine` equal each alone.

Several requests of different lengths arrive at different steps of one engine:
a long prompt is chunk-prefilled under the token budget while shorter requests
decode in the same steps (one model call per step over the mixed batch); when it
has finished, the same prompt comes back and reuses its full blocks (prefix hit at
admission), and decodes beside a newcomer's prefill. A second engine, its pool
too small for its requests together, serves a batch through `generate`. Every
request's greedy tokens must equal the model's own `generate` of that request
alone, and the pool must end with nothing in use. The engine is loaded through
SCHEDULER_MODULE and the model through the cache_aware_lm variable, so either
can be a candidate.
"""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import candidate, test_device
from gptlab_testkit.engine_driver import EngineDriver, StreamWatch

pytestmark = [pytest.mark.contract]

sched = candidate("SCHEDULER_MODULE")

CONTEXT = 16  # make_test_model() promises positions 0..15 and token ids 0..15
BLOCK = 4
SHARED = [3, 1, 4, 1, 5, 9, 2, 6]  # two complete blocks
LONG = [*SHARED, 5, 3]  # 10 tokens: 3 prefill chunks under a budget of 4
DEVICE = test_device()


def alone(model, prompt: list[int], max_new_tokens: int, eos: int | None = None) -> list[int]:
    """The oracle: greedy generation of one request by itself, stopped after its first EOS."""
    ids = torch.tensor([prompt], dtype=torch.long, device=DEVICE)
    positions = torch.arange(len(prompt), device=DEVICE)[None]
    with torch.no_grad():
        out = model.generate(ids, positions, max_new_tokens, eos_token_id=eos)
    tokens = out[0, len(prompt) :].tolist()
    return tokens[: tokens.index(eos) + 1] if eos in tokens else tokens


class Served(EngineDriver):
    """An engine over a model whose forward calls are counted, stepped with records kept."""

    def __init__(self, model, **sizes: int) -> None:
        # A model call is one forward, or (a model with the serving seam) one run_blocks
        # outside a forward: forward runs its blocks through run_blocks itself.
        self.calls = self._inside_forward = 0
        self.hooks = [
            model.register_forward_pre_hook(self._enter),
            model.register_forward_hook(self._leave),
        ]
        self._run_blocks = getattr(model, "run_blocks", None)
        if self._run_blocks is not None:
            model.run_blocks = self._counted_run_blocks
        self.model = model
        super().__init__(sched.Engine(model, context_length=CONTEXT, **sizes))
        self.calls_after_setup = self.calls  # the engine may probe the model once

    def _enter(self, module, args) -> None:
        self.calls += 1
        self._inside_forward += 1

    def _leave(self, module, args, output) -> None:
        self._inside_forward -= 1

    def _counted_run_blocks(self, *args, **kwargs):
        if not self._inside_forward:
            self.calls += 1
        return self._run_blocks(*args, **kwargs)

    def run(self, max_steps: int = 500) -> None:
        super().run(max_steps)

    def rows(self, rid: str) -> list[tuple[int, str]]:
        """(tokens, kind) of every row ``rid`` had, step by step."""
        return [
            (int(row.num_tokens), str(row.kind))
            for record in self.records
            for row in record.scheduled
            if row.request_id == rid
        ]

    def close(self) -> None:
        for hook in self.hooks:
            hook.remove()
        if self._run_blocks is not None:
            del self.model.run_blocks


@pytest.fixture
def model(model_module):
    return model_module.make_test_model().to(DEVICE)


@pytest.mark.owner("slice_composition")
def test_concurrent_requests_chunk_decode_and_reuse_blocks_as_each_alone(model) -> None:
    eos = alone(model, [9, 9, 1, 2, 0], 8)[2]  # "x" must stop at its first EOS, mid-batch
    want = {
        "b": alone(model, [7, 2], 6),
        "a": alone(model, LONG, 4),
        "x": alone(model, [9, 9, 1, 2, 0], 8, eos),
        "y": alone(model, [4, 4, 8, 8, 12, 12, 0], 5),
    }
    served = Served(
        model, num_blocks=16, block_size=BLOCK, max_num_batched_tokens=4, max_num_seqs=4
    )
    try:
        served.add("b", [7, 2], 6)
        served.step()  # b's prompt: b emits and is decode-ready from now on
        served.add("a", LONG, 4)
        served.step()
        served.add("x", [9, 9, 1, 2, 0], 8, eos_token_id=eos)
        served.run()

        for rid in ("b", "a", "x"):
            assert served.outputs[rid] == want[rid], f"request {rid}"
        a_prefill = [tokens for tokens, kind in served.rows("a") if kind == "prefill"]
        assert sum(a_prefill) == len(LONG) and len(a_prefill) >= 3, "chunked under budget 4"
        assert any(
            {str(row.kind) for row in record.scheduled} == {"decode", "prefill"}
            for record in served.records
        ), "no step mixed a decode with a prefill chunk"

        # The same prompt again, right after it finished: its two full blocks are reused.
        served.add("a2", LONG, 4)
        served.step()
        assert served.outputs["a2"], "a2 emits after its one uncached chunk"
        served.add("y", [4, 4, 8, 8, 12, 12, 0], 5)
        served.run()
        assert served.outputs["a2"] == want["a"]
        assert served.outputs["y"] == want["y"]
        assert served.rows("a2")[0] == (len(LONG) - 2 * BLOCK, "prefill")
        assert all(kind == "decode" for _, kind in served.rows("a2")[1:])

        stepped = sum(1 for record in served.records if record.scheduled)
        assert served.calls - served.calls_after_setup == stepped, "one model call per step"
        assert served.calls_after_setup <= 1
        stats = served.engine.stats
        assert stats.used_blocks == 0
        assert stats.free_blocks + stats.cached_blocks == 16
    finally:
        served.close()


TIGHT_PROMPTS = [[2, 7, 1, 8, 2, 8], [1, 4, 1, 4], [6, 6, 6, 0, 1, 2, 3], [5]]
TIGHT_BUDGETS = [6, 8, 5, 9]
TIGHT_BLOCK = 2


def tight_pool_blocks() -> int:
    """The largest request alone, plus one block: the batch together must preempt."""
    return 1 + max(
        -(-(len(p) + n - 1) // TIGHT_BLOCK)
        for p, n in zip(TIGHT_PROMPTS, TIGHT_BUDGETS, strict=True)
    )


@pytest.mark.owner("preemption")
def test_a_pool_too_small_for_the_batch_streams_every_request_exact(model) -> None:
    want = [alone(model, prompt, n) for prompt, n in zip(TIGHT_PROMPTS, TIGHT_BUDGETS, strict=True)]
    served = Served(
        model, num_blocks=tight_pool_blocks(), block_size=TIGHT_BLOCK, max_num_batched_tokens=5
    )
    watch = StreamWatch(served.engine, model, TIGHT_PROMPTS, TIGHT_BUDGETS)
    try:
        streamed: dict[int, list[int]] = {i: [] for i in range(len(TIGHT_PROMPTS))}
        last: dict[int, int] = {}
        for position, item in enumerate(served.engine.generate(TIGHT_PROMPTS, TIGHT_BUDGETS)):
            assert item.index not in last, f"prompt {item.index} streamed after its last token"
            watch.seen(item)
            streamed[item.index].append(int(item.token_id))
            if item.finished:
                last[item.index] = position
        for index, tokens in enumerate(want):
            assert streamed[index] == tokens, f"prompt {index}"
        assert sorted(last) == list(range(len(TIGHT_PROMPTS)))
        assert not served.engine.has_unfinished_requests()
        assert served.engine.stats.used_blocks == 0
    finally:
        watch.close()
        served.close()


@pytest.mark.owner("preemption")
def test_a_pool_too_small_for_the_batch_steps_every_request_exact(model) -> None:
    """The same batch through add_request + step: a livelock fails naming who is stuck."""
    served = Served(
        model, num_blocks=tight_pool_blocks(), block_size=TIGHT_BLOCK, max_num_batched_tokens=5
    )
    try:
        for index, (prompt, n) in enumerate(zip(TIGHT_PROMPTS, TIGHT_BUDGETS, strict=True)):
            served.add(f"r{index}", prompt, n)
        served.run()
        for index, (prompt, n) in enumerate(zip(TIGHT_PROMPTS, TIGHT_BUDGETS, strict=True)):
            assert served.outputs[f"r{index}"] == alone(model, prompt, n), f"request r{index}"
        assert served.engine.stats.used_blocks == 0
        assert served.engine.stats.preemptions >= 1, "the pool holds one request at a time"
    finally:
        served.close()
