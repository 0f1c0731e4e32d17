"""A failed step loses nothing (extension, owner ``step_atomicity``).

Faults are injected where a step can fail after it has started to change things:
in the model call, *after* the model has written the step's K/V (the serving seam's
``run_blocks``, or ``forward`` on the padded route, raises once it has returned), and
in a sampling draw (``torch.multinomial``, the contract's draw, raises). Whatever
failed, calling ``step()`` again must continue to exactly the outputs of a run
without faults (greedy and seeded requests alike), with no block leaked at the end;
the error names a request of the failed step.

Two drivers: every model call and every draw of one mixed run with preemption, in
turn (exhaustive); and a hypothesis state machine over arrivals, steps and faults.
"""

from __future__ import annotations

from collections.abc import Hashable
from contextlib import contextmanager
from functools import lru_cache

import pytest
import torch
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, precondition, rule

from gptlab_testkit import boundary_settings, candidate, test_device
from gptlab_testkit.models import cache_aware_modules

sched = candidate("SCHEDULER_MODULE")

pytestmark = [pytest.mark.extension, pytest.mark.owner("step_atomicity")]

MODULE = next(iter(cache_aware_modules()))  # one model: the routes are what differ
ROUTES = ("packed", "padded")
SIZES = {
    "context_length": 16,
    "num_blocks": 6,
    "block_size": 2,
    "max_num_batched_tokens": 5,
    "max_num_seqs": 3,
}
# (id, prompt, max_new_tokens, temperature, seed): greedy and seeded, a pool that preempts.
REQUESTS = (
    ("g1", [1, 2, 3, 4, 5], 4, 0.0, 0),
    ("s1", [6, 7, 8], 4, 0.9, 11),
    ("g2", [9, 10], 3, 0.0, 0),
    ("s2", [3, 1, 4, 1], 4, 1.3, 5),
    ("g3", [2, 7], 4, 0.0, 0),
    ("s3", [5, 9, 2], 3, 0.7, 3),
)


class InjectedFaultError(RuntimeError):
    """The fault this suite injects (never raised by an engine itself)."""


class Faults:
    """Counts model calls and draws; raises on the ones armed."""

    def __init__(self) -> None:
        self.calls = 0
        self.draws = 0
        self.fail_calls: set[int] = set()
        self.fail_draws: set[int] = set()
        self.counting = False

    def after_call(self) -> None:
        if not self.counting:
            return  # the construction probe
        self.calls += 1
        if self.calls in self.fail_calls:
            raise InjectedFaultError(f"model call {self.calls}")

    def before_draw(self) -> None:
        self.draws += 1
        if self.draws in self.fail_draws:
            raise InjectedFaultError(f"draw {self.draws}")


class FaultyPadded(torch.nn.Module):
    """The model behind ``forward`` only (the padded route); fails after computing."""

    def __init__(self, model, faults: Faults) -> None:
        super().__init__()
        self.inner = model
        self.faults = faults

    def forward(self, *args, **kwargs):
        output = self.inner(*args, **kwargs)
        self.faults.after_call()
        return output


class FaultyServable(FaultyPadded):
    """The model with its serving seam (the packed route): ``run_blocks`` fails after writing."""

    def run_blocks(self, *args, **kwargs):
        output = self.inner.run_blocks(*args, **kwargs)
        self.faults.after_call()
        return output

    @property
    def lm_head(self):
        return self.inner.lm_head


@contextmanager
def faulty_draws(faults: Faults):
    original = torch.multinomial

    def multinomial(*args, **kwargs):
        faults.before_draw()
        return original(*args, **kwargs)

    torch.multinomial = multinomial
    try:
        yield
    finally:
        torch.multinomial = original


@lru_cache(maxsize=2)
def base_model():
    return cache_aware_modules()[MODULE].make_test_model().to(test_device())


def make_engine(route: str, faults: Faults):
    wrapper = FaultyServable if route == "packed" else FaultyPadded
    engine = sched.Engine(wrapper(base_model(), faults), **SIZES)
    faults.counting = True
    return engine


def add(engine, request) -> None:
    rid, prompt, max_new, temperature, seed = request
    engine.add_request(rid, prompt, max_new, temperature=temperature, seed=seed)


def assert_no_block_held(engine, num_blocks: int = SIZES["num_blocks"]) -> None:
    stats = engine.stats
    assert stats.used_blocks == 0, f"{stats.used_blocks} blocks leaked"
    assert stats.free_blocks + stats.cached_blocks == num_blocks


class Run:
    """An engine stepped to the end; a step that raises is retried (bounded)."""

    def __init__(self, route: str, faults: Faults) -> None:
        self.engine = make_engine(route, faults)
        self.outputs: dict[Hashable, list[int]] = {}
        self.failures = 0
        self.steps = 0

    def add(self, request) -> None:
        add(self.engine, request)
        self.outputs[request[0]] = []

    def step(self) -> bool:
        """One step; False if it raised (after checking the error names a request)."""
        self.steps += 1
        assert self.steps < 400, "requests still unfinished after 400 steps"
        unfinished = [rid for rid in self.outputs if self._unfinished(rid)]
        try:
            record = self.engine.step()
        except Exception as error:
            self.failures += 1
            message = str(error)
        else:
            message = None
        if message is not None:
            assert any(repr(rid) in message or str(rid) in message for rid in unfinished), (
                f"the error names none of the requests in flight: {message}"
            )
            return False
        for rid, token in dict(record.emitted).items():
            self.outputs[rid].append(int(token))
        return True

    def _unfinished(self, rid: Hashable) -> bool:
        try:
            self.engine.status(rid)
        except (ValueError, TypeError):
            return False
        return True

    def finish(self) -> dict[Hashable, list[int]]:
        while self.engine.has_unfinished_requests():
            self.step()
        assert_no_block_held(self.engine)
        return self.outputs


@lru_cache(maxsize=4)
def fault_free(route: str) -> tuple[dict[Hashable, list[int]], int, int, int]:
    """(outputs, model calls, draws, preemptions) of the run without faults."""
    faults = Faults()
    run = Run(route, faults)
    with faulty_draws(faults):
        for request in REQUESTS:
            run.add(request)
        outputs = run.finish()
    return outputs, faults.calls, faults.draws, run.engine.stats.preemptions


def test_the_fault_free_run_mixes_greedy_and_seeded_requests_with_preemption():
    outputs, calls, draws, preemptions = fault_free("packed")
    assert preemptions > 0 and draws >= 6 and calls >= 8
    assert fault_free("padded")[0] == outputs  # both routes: the same tokens


def sweep(route: str, site: str) -> None:
    want, calls, draws, _ = fault_free(route)
    for n in range(1, (calls if site == "model" else draws) + 1):
        faults = Faults()
        (faults.fail_calls if site == "model" else faults.fail_draws).add(n)
        run = Run(route, faults)
        with faulty_draws(faults):
            for request in REQUESTS:
                run.add(request)
            got = run.finish()
        assert run.failures == 1, f"{site} fault {n}: {run.failures} steps failed"
        assert got == want, f"{site} fault {n} ({route}): {got} != fault-free {want}"


@pytest.mark.parametrize("route", ROUTES)
def test_a_fault_at_any_draw_is_survived_exactly(route):
    sweep(route, "draw")


def test_a_fault_at_any_model_call_is_survived_exactly():
    sweep("packed", "model")  # the padded route's call writes nothing before it returns


class FaultMachine(RuleBasedStateMachine):
    """Arrivals, steps, and steps with a fault in the model call or the next draw."""

    @initialize(route=st.sampled_from(ROUTES))
    def start(self, route):
        self.route = route
        self.faults = Faults()
        self.run = Run(route, self.faults)
        self.arrivals = list(REQUESTS)
        self.patch = faulty_draws(self.faults)
        self.patch.__enter__()

    @precondition(lambda self: self.arrivals)
    @rule()
    def arrive(self):
        self.run.add(self.arrivals.pop(0))

    @precondition(lambda self: self.run.engine.has_unfinished_requests())
    @rule()
    def step(self):
        assert self.run.step(), "a step without a fault failed"

    @precondition(lambda self: self.run.engine.has_unfinished_requests())
    @rule()
    def step_with_a_model_fault(self):
        self.faults.fail_calls = {self.faults.calls + 1}
        assert not self.run.step(), "the injected model fault did not surface"

    @precondition(lambda self: self.run.engine.has_unfinished_requests())
    @rule()
    def step_with_a_draw_fault(self):
        before = self.faults.draws
        self.faults.fail_draws = {before + 1}
        ok = self.run.step()
        assert ok == (self.faults.draws == before), "a draw fault was swallowed or invented"
        self.faults.fail_draws = set()

    def teardown(self):
        try:
            if getattr(self, "run", None) is None:
                return
            self.faults.fail_calls = set()
            self.faults.fail_draws = set()
            for request in self.arrivals:
                self.run.add(request)
            got = self.run.finish()
            assert got == fault_free(self.route)[0]
        finally:
            if getattr(self, "patch", None) is not None:
                self.patch.__exit__(None, None, None)


FaultMachine.TestCase.settings = boundary_settings(12, stateful_step_count=14)
test_arrivals_steps_and_faults = FaultMachine.TestCase


class Poisoned(FaultyServable):
    """A model that always fails on a batch holding token 15 (one poisoned prompt)."""

    def run_blocks(self, input_ids, *args, **kwargs):
        if bool((input_ids == 15).any()):
            raise InjectedFaultError("token 15 poisons this model")
        return self.inner.run_blocks(input_ids, *args, **kwargs)


def test_a_request_that_always_fails_is_isolated_and_aborted():
    engine = sched.Engine(Poisoned(base_model(), Faults()), **{**SIZES, "num_blocks": 16})
    prompts = [[1, 2, 3], [4, 15, 6], [7, 8], [9, 10, 11, 12]]
    items = list(engine.generate(prompts, 3))
    errors = [item for item in items if getattr(item, "error", None)]
    assert [item.index for item in errors] == [1] and errors[0].finished
    for index in (0, 2, 3):
        tokens = [item.token_id for item in items if item.index == index]
        want = fault_free_alone(prompts[index], 3)
        assert tokens == want, f"prompt {index}: {tokens} != {want}"
    assert not engine.has_unfinished_requests()
    assert_no_block_held(engine, 16)


def fault_free_alone(prompt: list[int], max_new: int) -> list[int]:
    engine = sched.Engine(base_model(), **{**SIZES, "num_blocks": 16})
    return [item.token_id for item in engine.generate([prompt], max_new)]


def test_abort_request_frees_a_waiting_or_running_request():
    engine = sched.Engine(base_model(), **SIZES)
    engine.add_request("a", [1, 2, 3], 4)
    engine.add_request("b", [4, 5], 4)
    outputs = [t for rid, t in engine.step().emitted.items() if rid == "b"]
    engine.add_request("w", [6, 7], 2)
    assert engine.status("a") == "running"
    engine.abort_request("a")
    engine.abort_request("w")
    for rid in ("a", "w"):
        with pytest.raises(ValueError, match="request_id"):
            engine.status(rid)
    with pytest.raises(ValueError, match="request_id"):
        engine.abort_request("a")
    while engine.has_unfinished_requests():
        outputs += [t for rid, t in engine.step().emitted.items() if rid == "b"]
    assert outputs == fault_free_alone([4, 5], 4)
    assert_no_block_held(engine)
