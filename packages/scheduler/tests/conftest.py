"""Fixtures for the scheduler suite (pytest loads this; tests never import it).

The oracle is generation alone: a request's greedy output equals the model's own
``generate`` over its prompt at positions ``0..T-1`` (stopping after the first EOS).
``Driver`` runs a candidate ``Engine`` step by step and keeps every record, so
tests read the decisions (rows, kinds, preemptions, emitted tokens) after the fact.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from functools import lru_cache

import pytest
import torch

from gptlab_testkit import candidate, test_device
from gptlab_testkit.engine_driver import EngineDriver
from gptlab_testkit.models import cache_aware_modules

sched = candidate("SCHEDULER_MODULE")
MODULES = cache_aware_modules()
CONTEXT = 16  # make_test_model() promises positions 0..15 and token ids 0..15
VOCAB = 16


@lru_cache(maxsize=4)
def test_model(module_id: str):
    return MODULES[module_id].make_test_model().to(test_device())


@pytest.fixture(params=list(MODULES), ids=list(MODULES))
def model_id(request) -> str:
    return request.param


@pytest.fixture
def model(model_id: str):
    return test_model(model_id)


@lru_cache(maxsize=4096)
def _alone(module_id: str, prompt: tuple[int, ...], eos: int | None) -> tuple[int, ...]:
    """Greedy continuation of ``prompt`` alone, as long as the context allows."""
    model = test_model(module_id)
    T = len(prompt)
    ids = torch.tensor([prompt], dtype=torch.long, device=test_device())
    positions = torch.arange(T, device=test_device())[None]
    with torch.no_grad():
        out = model.generate(ids, positions, CONTEXT - T, eos_token_id=eos)
    tokens = out[0, T:].tolist()
    if eos is not None and eos in tokens:
        tokens = tokens[: tokens.index(eos) + 1]
    return tuple(tokens)


def alone(module_id: str, prompt: list[int], max_new_tokens: int, eos: int | None = None):
    """What the engine must emit for this request, whatever shares its batches."""
    return list(_alone(module_id, tuple(prompt), eos)[:max_new_tokens])


Driver = EngineDriver  # shared with the integration slice (gptlab_testkit)


def rows(record) -> dict[Hashable, tuple[int, str]]:
    """{request id: (tokens, kind)} of one step record."""
    return {row.request_id: (int(row.num_tokens), str(row.kind)) for row in record.scheduled}


@pytest.fixture
def make_engine(model):
    """``make_engine(num_blocks=..., block_size=..., ...)``: a Driver over the test model."""

    def make(
        *,
        num_blocks: int = 32,
        block_size: int = 4,
        max_num_batched_tokens: int = 64,
        max_num_seqs: int = 8,
        context_length: int = CONTEXT,
    ) -> Driver:
        engine = sched.Engine(
            model,
            context_length=context_length,
            num_blocks=num_blocks,
            block_size=block_size,
            max_num_batched_tokens=max_num_batched_tokens,
            max_num_seqs=max_num_seqs,
        )
        return Driver(engine)

    return make


@dataclass(frozen=True)
class Workload:
    """Requests ``(id, prompt, max_new_tokens, eos, arrival step)`` and the engine's sizes."""

    requests: tuple[tuple[str, list[int], int, int | None, int], ...]
    block_size: int
    num_blocks: int
    max_num_batched_tokens: int
    max_num_seqs: int


def play(make_engine, workload: Workload, on_step=None) -> Driver:
    """Add each request at its arrival step, step until all finished; ``on_step(driver, rec)``."""
    driver = make_engine(
        num_blocks=workload.num_blocks,
        block_size=workload.block_size,
        max_num_batched_tokens=workload.max_num_batched_tokens,
        max_num_seqs=workload.max_num_seqs,
    )
    pending = sorted(workload.requests, key=lambda r: r[4])
    # Generous (budget 1, every request recomputed twice) yet quick to reach when a
    # broken candidate livelocks: a bound, not a promise about step counts.
    bound = 16 + 3 * sum(len(prompt) + n for _, prompt, n, _, _ in workload.requests)
    step = 0
    while pending or driver.engine.has_unfinished_requests():
        while pending and pending[0][4] <= step:
            rid, prompt, max_new, eos, _ = pending.pop(0)
            driver.add(rid, prompt, max_new, eos_token_id=eos)
        record = driver.step()
        if on_step is not None:
            on_step(driver, record)
        step += 1
        assert step < bound, f"requests still unfinished after {bound} steps"
    return driver


@pytest.fixture
def play_workload(make_engine):
    """``play_workload(workload, on_step=None) -> Driver`` over the test model."""

    def run(workload: Workload, on_step=None) -> Driver:
        return play(make_engine, workload, on_step)

    return run


def assert_outputs_alone(model_id: str, workload: Workload, driver: Driver) -> None:
    for rid, prompt, max_new, eos, _ in workload.requests:
        want = alone(model_id, prompt, max_new, eos)
        assert driver.outputs[rid] == want, f"request {rid}: {driver.outputs[rid]} != alone {want}"


@pytest.fixture
def outputs_alone(model_id):
    """``outputs_alone(workload, driver)``: every output equals generation alone."""

    def check(workload: Workload, driver: Driver) -> None:
        assert_outputs_alone(model_id, workload, driver)

    return check


def _draw_workload(data, *, small_pool: bool = False, max_requests: int = 5) -> Workload:
    """Requests sharing prefixes of one base prompt, arriving at steps 0..6; any sizes.

    ``small_pool``: the pool holds the largest request and at most two blocks more,
    so several requests together run out of blocks (preemption).
    """
    from hypothesis import strategies as st

    draw = data.draw
    base = draw(st.lists(st.integers(0, VOCAB - 1), min_size=12, max_size=12), label="base")
    block_size = draw(st.sampled_from([1, 2, 4]), label="block_size")
    requests = []
    for index in range(draw(st.integers(1, max_requests), label="requests")):
        shared = draw(st.integers(0, 8), label="shared")
        tail = draw(st.lists(st.integers(0, VOCAB - 1), max_size=4), label="tail")
        prompt = (base[:shared] + tail) or [int(base[0])]
        max_new = draw(st.integers(1, min(6, CONTEXT - len(prompt))), label="max_new")
        eos = draw(st.none() | st.integers(0, VOCAB - 1), label="eos")
        arrival = draw(st.integers(0, 6), label="arrival")
        requests.append((f"r{index}", prompt, max_new, eos, arrival))
    need = max(-(-(len(p) + n - 1) // block_size) for _, p, n, _, _ in requests)
    extra = draw(st.integers(0, 2 if small_pool else 24), label="extra blocks")
    return Workload(
        tuple(requests),
        block_size,
        need + extra,
        draw(st.integers(1, 12), label="max_num_batched_tokens"),
        draw(st.integers(1, 4), label="max_num_seqs"),
    )


@pytest.fixture
def draw_workload():
    """``draw_workload(data, small_pool=False)``: a Workload drawn from ``st.data()``."""
    return _draw_workload


@pytest.fixture
def greedy_alone(model_id):
    """``greedy_alone(prompt, max_new_tokens, eos=None)``: the oracle for the current model."""

    def oracle(prompt: list[int], max_new_tokens: int, eos: int | None = None) -> list[int]:
        return alone(model_id, prompt, max_new_tokens, eos)

    return oracle


@pytest.fixture
def rows_of():
    """``rows_of(record) -> {request id: (num_tokens, kind)}``."""
    return rows
