"""What a request or an engine can fail on is refused up front (extension, this project's rules).

Each case is valid in every respect but one; a rejected ``add_request`` leaves the
engine as it was and makes no model call, and the requests already queued (one
running, one waiting: the bad one is never the first) still finish exactly. The
rules beyond README's contract:

- a temperature below ``GREEDY_BELOW`` (1e-5), a positive subnormal included, is
  greedy, as serving engines treat it: never a NaN draw;
- a ``meta`` prompt tensor is refused (it holds no ids);
- ``Engine`` refuses, before building its pool: what does not answer like a
  cache-aware model, a model on ``meta``, a ``context_length`` beyond the context
  the model states, and a pool whose bytes the device cannot hold (a ValueError
  naming the sizes and the bytes, not the allocator's failure).
"""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import CountingModel, assert_rejects, candidate

sched = candidate("SCHEDULER_MODULE")

pytestmark = [pytest.mark.owner("scheduler_validation"), pytest.mark.extension]

REJECTED = (ValueError, TypeError)
SIZES = {
    "context_length": 16,
    "num_blocks": 8,
    "block_size": 2,
    "max_num_batched_tokens": 8,
    "max_num_seqs": 4,
}


def snapshot(engine) -> tuple:
    s = engine.stats
    counts = (s.steps, s.preemptions, s.free_blocks, s.cached_blocks, s.used_blocks)
    return (*counts, s.num_waiting, s.num_running, engine.has_unfinished_requests())


@pytest.fixture
def busy(model, greedy_alone):
    """An engine with "running" (admitted) and "queued" (waiting); checks them at the end."""
    counting = CountingModel(model)
    engine = sched.Engine(counting, **SIZES)
    outputs: dict[str, list[int]] = {"running": [], "queued": []}
    engine.add_request("running", [4, 5], 3)
    for rid, token in engine.step().emitted.items():
        outputs[rid].append(token)
    engine.add_request("queued", [6, 7, 8], 3)
    yield engine, counting
    while engine.has_unfinished_requests():
        for rid, token in engine.step().emitted.items():
            outputs[rid].append(token)
    assert outputs == {"running": greedy_alone([4, 5], 3), "queued": greedy_alone([6, 7, 8], 3)}


@pytest.mark.parametrize(
    "prompt",
    [torch.tensor([1, 2, 3], device="meta"), torch.tensor([[1, 2, 3]], device="meta")],
    ids=["[T]", "[1, T]"],
)
def test_a_meta_prompt_tensor_is_refused_before_anything_changes(busy, prompt):
    engine, counting = busy
    before, calls = snapshot(engine), counting.calls
    assert_rejects(lambda: engine.add_request("x", prompt, 3), REJECTED, "prompt_ids")
    assert snapshot(engine) == before and counting.calls == calls
    with pytest.raises(REJECTED):
        engine.status("x")


@pytest.mark.parametrize("temperature", [1e-45, 5e-324, 1e-30, 1e-6])
def test_a_temperature_below_the_floor_is_greedy(make_engine, greedy_alone, temperature):
    driver = make_engine()
    driver.add("warm", [1, 2, 3], 4, temperature=0.8, seed=1)  # a real draw shares the steps
    driver.add("tiny", [9, 3, 7], 5, temperature=temperature, seed=3)
    driver.run()
    assert driver.outputs["tiny"] == greedy_alone([9, 3, 7], 5)


def test_generate_applies_the_same_floor(model, greedy_alone):
    engine = sched.Engine(model, **SIZES)
    tokens = [item.token_id for item in engine.generate([[2, 4, 6]], 4, temperature=1e-45)]
    assert tokens == greedy_alone([2, 4, 6], 4)


class NotCacheAware(torch.nn.Module):
    """Callable, but answers like a plain language model (no cache metadata)."""

    def __init__(self, model) -> None:
        super().__init__()
        self.inner = model
        self.calls = 0

    def forward(self, input_ids, positions, use_cache=False):
        self.calls += 1
        output = self.inner(input_ids, positions, use_cache=use_cache)
        return type("Plain", (), {"logits": output.logits})()


@pytest.mark.parametrize(
    "bad",
    [
        lambda model: None,
        lambda model: object(),
        lambda model: lambda *args, **kwargs: None,
        lambda model: torch.nn.Linear(4, 4),
        NotCacheAware,
    ],
    ids=["None", "an object", "a function returning None", "a Linear", "no cache metadata"],
)
def test_engine_refuses_what_is_not_a_cache_aware_model(model, bad):
    assert_rejects(lambda: sched.Engine(bad(model), **SIZES), REJECTED, "model")


def test_engine_refuses_a_model_on_meta(model_id):
    from gptlab_testkit.models import cache_aware_modules

    meta = cache_aware_modules()[model_id].make_test_model().to("meta")
    assert_rejects(lambda: sched.Engine(meta, **SIZES), REJECTED, "model")


def test_engine_refuses_a_context_beyond_the_models_own(model):
    own = getattr(getattr(model, "geometry", None), "context_length", None)
    if own is None:
        pytest.skip("the model states no context length")
    counting = CountingModel(model)
    counting.geometry = model.geometry  # what the engine reads (this project's models)
    assert_rejects(
        lambda: sched.Engine(counting, **{**SIZES, "context_length": own + 1}),
        REJECTED,
        "context_length",
    )
    assert counting.calls == 0, "the model was called before the context was checked"
    sched.Engine(model, **{**SIZES, "context_length": own})  # exactly the model's: fine


@pytest.mark.parametrize(
    ("name", "value"),
    [("num_blocks", 2**40), ("block_size", 2**40), ("num_blocks", 2**62)],
)
def test_engine_refuses_a_pool_that_cannot_be_allocated(model, name, value):
    error = assert_rejects(lambda: sched.Engine(model, **{**SIZES, name: value}), ValueError, name)
    assert "bytes" in str(error) and "enforce fail" not in str(error)


@pytest.mark.parametrize("bad", [["queued"], {"queued": 1}, None], ids=["list", "dict", "None"])
def test_status_and_abort_refuse_an_id_of_the_wrong_type_naming_it(busy, bad):
    """An unhashable id is refused naming `request_id` (not "unhashable type"), and the
    request named inside it ("queued", the second row) is neither read nor dropped."""
    engine, counting = busy
    before, calls = snapshot(engine), counting.calls
    assert_rejects(lambda: engine.status(bad), REJECTED, "request_id")
    assert_rejects(lambda: engine.abort_request(bad), REJECTED, "request_id")
    assert snapshot(engine) == before and counting.calls == calls
    assert engine.status("queued") == "waiting"


def test_abort_request_of_an_unknown_id_is_refused(busy):
    engine, _ = busy
    before = snapshot(engine)
    for bad in ("nobody", 7, 1.5):
        assert_rejects(lambda bad=bad: engine.abort_request(bad), REJECTED, "request_id")
    assert snapshot(engine) == before
