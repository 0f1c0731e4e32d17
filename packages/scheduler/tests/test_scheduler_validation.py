"""Rejected input: a ValueError or TypeError naming the argument, before anything changes.

A contract test accepts a message naming the argument with underscores or spaces, or
the offending value (docs/contracts.md); `test_messages_use_the_parameter_identifier`
(extension) requires this project's wording.

Each case is valid in every respect but one. After a rejected ``add_request`` the
engine's counters, pool and queue are as before, the rejected id is unknown, and
the requests already queued still finish with their outputs alone.

The contract's rejections (README, "Contract") are graded: sizes below 1, an id already
waiting or running, an empty prompt or a token outside the vocabulary, a budget below 1,
an EOS outside the vocabulary, a negative temperature or seed, a request beyond the
context or the pool. Arguments of another kind (a bool, float, str or None where an int
belongs, a float tensor), a non-finite temperature and an id of another kind are this
project's extension: refused by the reference, never graded.
"""

from __future__ import annotations

import math

import pytest
import torch

from gptlab_testkit import assert_rejects, candidate
from gptlab_testkit.messages import assert_rejects_naming

sched = candidate("SCHEDULER_MODULE")

pytestmark = [pytest.mark.owner("scheduler_validation")]

REJECTED = (ValueError, TypeError)
SIZES = ("context_length", "num_blocks", "block_size", "max_num_batched_tokens", "max_num_seqs")
VALID_SIZES = {
    "context_length": 16,
    "num_blocks": 8,
    "block_size": 2,
    "max_num_batched_tokens": 8,
    "max_num_seqs": 4,
}
HUGE_TOKEN = 10**6  # past any test model's vocabulary


BAD_SIZES = [0, -1]
# Sizes of another kind: this project's rule (an argument kind), not the contract's.
SIZES_OF_ANOTHER_KIND = [True, 2.0, "4", None]


@pytest.mark.contract
@pytest.mark.rejection
@pytest.mark.parametrize("bad", BAD_SIZES)
@pytest.mark.parametrize("name", SIZES)
def test_engine_sizes(model, name, bad):
    sizes = {**VALID_SIZES, name: bad}
    assert_rejects_naming(lambda: sched.Engine(model, **sizes), REJECTED, name, values=[bad])


@pytest.mark.extension
@pytest.mark.parametrize("bad", SIZES_OF_ANOTHER_KIND)
@pytest.mark.parametrize("name", SIZES)
def test_engine_sizes_of_another_kind(model, name, bad):
    sizes = {**VALID_SIZES, name: bad}
    assert_rejects_naming(lambda: sched.Engine(model, **sizes), REJECTED, name, values=[bad])


@pytest.mark.extension
@pytest.mark.parametrize("bad", BAD_SIZES + SIZES_OF_ANOTHER_KIND)
@pytest.mark.parametrize("name", SIZES)
def test_engine_size_messages_use_the_parameter_identifier(model, name, bad):
    sizes = {**VALID_SIZES, name: bad}
    assert_rejects(lambda: sched.Engine(model, **sizes), REJECTED, name)


def snapshot(engine) -> tuple:
    s = engine.stats
    counts = (s.steps, s.preemptions, s.free_blocks, s.cached_blocks, s.used_blocks)
    return (*counts, s.num_waiting, s.num_running, engine.has_unfinished_requests())


# (argument named, add_request positional and keyword arguments): one thing wrong each.
# The contract's rejections: values out of the README's ranges, ids already in use.
BAD_REQUESTS = [
    ("request_id", ("queued", [1, 2, 3], 4), {}),  # already waiting
    ("request_id", ("running", [1, 2, 3], 4), {}),  # already running
    ("prompt_ids", ("x", [], 4), {}),
    ("prompt_ids", ("x", [1, -1, 2], 4), {}),
    ("prompt_ids", ("x", [1, HUGE_TOKEN], 4), {}),
    ("max_new_tokens", ("x", [1, 2, 3], 0), {}),
    ("max_new_tokens", ("x", [1, 2, 3], -2), {}),
    ("eos_token_id", ("x", [1, 2, 3], 4), {"eos_token_id": -1}),
    ("eos_token_id", ("x", [1, 2, 3], 4), {"eos_token_id": HUGE_TOKEN}),
    ("temperature", ("x", [1, 2, 3], 4), {"temperature": -0.5}),
    ("seed", ("x", [1, 2, 3], 4), {"seed": -1}),
]
# This project's rules: arguments of another kind and a non-finite temperature.
REQUESTS_OF_ANOTHER_KIND = [
    ("request_id", (True, [1, 2, 3], 4), {}),
    ("request_id", (1.5, [1, 2, 3], 4), {}),
    ("request_id", (None, [1, 2, 3], 4), {}),
    ("request_id", (("t", 1), [1, 2, 3], 4), {}),
    ("prompt_ids", ("x", [1, True, 2], 4), {}),
    ("prompt_ids", ("x", [1, 2.0], 4), {}),
    ("prompt_ids", ("x", "abc", 4), {}),
    ("prompt_ids", ("x", None, 4), {}),
    ("prompt_ids", ("x", torch.tensor([1.0, 2.0]), 4), {}),
    ("max_new_tokens", ("x", [1, 2, 3], True), {}),
    ("max_new_tokens", ("x", [1, 2, 3], 2.0), {}),
    ("eos_token_id", ("x", [1, 2, 3], 4), {"eos_token_id": True}),
    ("eos_token_id", ("x", [1, 2, 3], 4), {"eos_token_id": 1.0}),
    ("temperature", ("x", [1, 2, 3], 4), {"temperature": math.nan}),
    ("temperature", ("x", [1, 2, 3], 4), {"temperature": math.inf}),
    ("temperature", ("x", [1, 2, 3], 4), {"temperature": "hot"}),
    ("seed", ("x", [1, 2, 3], 4), {"seed": 1.5}),
    ("seed", ("x", [1, 2, 3], 4), {"seed": True}),
]
ALL_BAD_REQUESTS = BAD_REQUESTS + REQUESTS_OF_ANOTHER_KIND


def offending(argument: str, args: tuple, kwargs: dict) -> object:
    """The bad value of a BAD_REQUESTS case (a message may name it instead of the argument)."""
    positional = ("request_id", "prompt_ids", "max_new_tokens")
    return args[positional.index(argument)] if argument in positional else kwargs[argument]


@pytest.mark.extension
@pytest.mark.parametrize(
    ("argument", "args", "kwargs"),
    ALL_BAD_REQUESTS,
    ids=[f"{c[0]}-{i}" for i, c in enumerate(ALL_BAD_REQUESTS)],
)
def test_add_request_messages_use_the_parameter_identifier(make_engine, argument, args, kwargs):
    driver = make_engine(**{k: v for k, v in VALID_SIZES.items() if k != "context_length"})
    driver.add("running", [4, 5], 3)
    driver.step()
    driver.add("queued", [6, 7, 8], 3)
    assert_rejects(lambda: driver.engine.add_request(*args, **kwargs), REJECTED, argument)


def rejects_and_changes_nothing(make_engine, greedy_alone, argument, args, kwargs) -> None:
    driver = make_engine(**{k: v for k, v in VALID_SIZES.items() if k != "context_length"})
    driver.add("running", [4, 5], 3)
    driver.step()
    driver.add("queued", [6, 7, 8], 3)
    before = snapshot(driver.engine)
    assert_rejects_naming(
        lambda: driver.engine.add_request(*args, **kwargs),
        REJECTED,
        argument,
        values=[offending(argument, args, kwargs)],
    )
    assert snapshot(driver.engine) == before
    if args[0] == "x":
        with pytest.raises(REJECTED):
            driver.engine.status("x")
    driver.run()
    assert driver.outputs["running"] == greedy_alone([4, 5], 3)
    assert driver.outputs["queued"] == greedy_alone([6, 7, 8], 3)


@pytest.mark.contract
@pytest.mark.rejection
@pytest.mark.parametrize(
    ("argument", "args", "kwargs"),
    BAD_REQUESTS,
    ids=[f"{c[0]}-{i}" for i, c in enumerate(BAD_REQUESTS)],
)
def test_add_request_rejects_and_changes_nothing(make_engine, greedy_alone, argument, args, kwargs):
    rejects_and_changes_nothing(make_engine, greedy_alone, argument, args, kwargs)


@pytest.mark.extension
@pytest.mark.parametrize(
    ("argument", "args", "kwargs"),
    REQUESTS_OF_ANOTHER_KIND,
    ids=[f"{c[0]}-{i}" for i, c in enumerate(REQUESTS_OF_ANOTHER_KIND)],
)
def test_add_request_rejects_arguments_of_another_kind_and_changes_nothing(
    make_engine, greedy_alone, argument, args, kwargs
):
    rejects_and_changes_nothing(make_engine, greedy_alone, argument, args, kwargs)


@pytest.mark.contract
@pytest.mark.rejection
def test_a_request_beyond_the_context_is_rejected(make_engine):
    driver = make_engine()
    before = snapshot(driver.engine)
    assert_rejects_naming(
        lambda: driver.engine.add_request("x", list(range(10)), 7),
        REJECTED,
        ("max_new_tokens", "prompt_ids", "context_length"),
        values=[7, 16],
    )
    assert snapshot(driver.engine) == before


@pytest.mark.contract
@pytest.mark.rejection
def test_a_request_beyond_the_pool_is_rejected_and_an_exact_fit_runs(make_engine, greedy_alone):
    """4 blocks of 2: 6 prompt tokens + 4 new store 9 K/V (too many), + 3 new store 8."""
    driver = make_engine(num_blocks=4, block_size=2)
    prompt = [1, 3, 5, 7, 9, 11]
    before = snapshot(driver.engine)
    assert_rejects_naming(
        lambda: driver.engine.add_request("x", prompt, 4),
        REJECTED,
        ("max_new_tokens", "prompt_ids", "num_blocks"),
        values=[4],
    )
    assert snapshot(driver.engine) == before
    driver.add("fits", prompt, 3)
    driver.run()
    assert driver.outputs["fits"] == greedy_alone(prompt, 3)


@pytest.mark.contract
@pytest.mark.rejection
def test_a_finished_id_is_unknown_and_may_be_reused(make_engine, greedy_alone):
    driver = make_engine()
    driver.add("r", [2, 4], 2)
    driver.run()
    assert_rejects_naming(lambda: driver.engine.status("r"), REJECTED, "request_id", values=["r"])
    driver.add("r", [3, 5], 2)
    driver.outputs["r"] = []
    driver.run()
    assert driver.outputs["r"] == greedy_alone([3, 5], 2)


@pytest.mark.contract
@pytest.mark.rejection
def test_generate_validates_every_prompt_before_adding_any(make_engine):
    """Raised when called or at the first item (a generator may validate lazily)."""
    driver = make_engine()
    before = snapshot(driver.engine)
    assert_rejects_naming(
        lambda: next(iter(driver.engine.generate([[1, 2], [3, -4], [5]], 3))),
        REJECTED,
        ("prompts", "prompt_ids"),
        values=[-4],
    )
    assert_rejects_naming(
        lambda: next(iter(driver.engine.generate([[1, 2], [3]], [3, 4, 5]))),
        REJECTED,
        "max_new_tokens",
        values=[[3, 4, 5]],
    )
    assert_rejects_naming(
        lambda: next(iter(driver.engine.generate([[1, 2], [3]], 0))),
        REJECTED,
        "max_new_tokens",
        values=[0],
    )
    assert snapshot(driver.engine) == before
