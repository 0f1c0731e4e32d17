"""PT28 sample_batch(logits, request_ids, generators, temperatures): per-request draws."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from gptlab_testkit import assert_rejects, boundary_settings, candidate
from gptlab_testkit.oracles import (
    SAMPLERS,
    drawn_tokens,
    forbidding,
    inputs_untouched,
    seeded,
    seeded_generator,
)

drill = candidate("DRILL_PT28_MODULE")

pytestmark = [pytest.mark.owner("pt28"), pytest.mark.contract]

# Five requests, each with its own seed and its own next-token logits row.
IDS = ["a", "b", "c", "d", "e"]
SEEDS = {"a": 101, "b": 202, "c": 303, "d": 404, "e": 505}
ROWS = {request: seeded(1, 9, seed=SEEDS[request])[0] * 2 for request in IDS}


def fresh_generators() -> dict[str, torch.Generator]:
    return {request: seeded_generator(SEEDS[request]) for request in IDS}


def step(requests, generators, temperatures) -> dict[str, int]:
    """One batch step over `requests` in this row order; {request id: drawn token}."""
    logits = torch.stack([ROWS[request] for request in requests])
    result = drill.sample_batch(logits, list(requests), generators, temperatures)
    return dict(zip(requests, drawn_tokens(result, len(requests)), strict=True))


def alone(request: str, temperature: float, steps: int = 1) -> list[int]:
    """The oracle: the request by itself with an isolated generator, one multinomial a step."""
    generator = seeded_generator(SEEDS[request])
    probs = torch.softmax(ROWS[request][None].float() / temperature, dim=-1)
    return [int(torch.multinomial(probs, 1, generator=generator)) for _ in range(steps)]


def state(generator: torch.Generator) -> torch.Tensor:
    return generator.get_state().clone()


def test_each_row_draws_what_its_request_draws_alone():
    got = step(IDS, fresh_generators(), [1.0] * 5)

    assert got == {request: alone(request, 1.0)[0] for request in IDS}


def test_each_row_uses_its_own_temperature():
    temperatures = [0.5, 1.0, 2.0, 0.7, 1.3]

    got = step(IDS, fresh_generators(), temperatures)

    want = {r: alone(r, t)[0] for r, t in zip(IDS, temperatures, strict=True)}
    assert got == want


def test_reordering_the_batch_changes_no_requests_draw():
    in_order = step(IDS, fresh_generators(), [1.0] * 5)
    reordered = step(["d", "b", "e", "a", "c"], fresh_generators(), [1.0] * 5)

    assert reordered == in_order


def test_removing_other_requests_changes_nothing():
    full = step(IDS, fresh_generators(), [1.0] * 5)
    generators = fresh_generators()
    untouched = {request: state(generators[request]) for request in ("a", "b", "d")}

    subset = step(["e", "c"], generators, [1.0, 1.0])

    assert subset == {"e": full["e"], "c": full["c"]}
    for request, before in untouched.items():
        assert torch.equal(state(generators[request]), before), f"{request}'s generator moved"


def test_a_requests_history_is_its_own_draws_across_changing_batches():
    generators = fresh_generators()
    batches = [IDS, ["c", "a"], ["e", "d", "c", "b", "a"], ["c"]]
    seen: dict[str, list[int]] = {request: [] for request in IDS}

    for requests in batches:
        for request, token in step(requests, generators, [1.0] * len(requests)).items():
            seen[request].append(token)

    for request, tokens in seen.items():
        assert tokens == alone(request, 1.0, steps=len(tokens)), f"request {request}"


def test_greedy_rows_take_the_argmax_and_leave_their_generator_alone():
    generators = fresh_generators()
    before = {request: state(generators[request]) for request in ("b", "d")}

    got = step(IDS, generators, [1.0, 0.0, 1.0, 0.0, 1.0])

    for request in ("b", "d"):
        assert got[request] == int(ROWS[request].argmax())
        assert torch.equal(state(generators[request]), before[request]), f"greedy {request} drew"
    assert {r: got[r] for r in "ace"} == {r: alone(r, 1.0)[0] for r in "ace"}


def test_an_all_greedy_batch_never_draws():
    with forbidding(*SAMPLERS, what="an all-greedy sample_batch"):
        got = step(IDS, fresh_generators(), [0.0] * 5)

    assert got == {request: int(ROWS[request].argmax()) for request in IDS}


def test_a_sample_after_a_greedy_step_is_the_requests_first_draw():
    generators = fresh_generators()
    step(["a", "b"], generators, [0.0, 1.0])  # a is greedy this step

    got = step(["b", "a"], generators, [1.0, 1.0])

    assert got["a"] == alone("a", 1.0)[0]
    assert got["b"] == alone("b", 1.0, steps=2)[1]


@boundary_settings(20)
@given(
    order=st.permutations(IDS),
    size=st.integers(1, 5),
    temperatures=st.lists(st.sampled_from([0.0, 0.6, 1.0, 1.7]), min_size=5, max_size=5),
)
def test_any_subset_in_any_order_draws_the_isolated_tokens(order, size, temperatures):
    requests = order[:size]
    chosen = temperatures[:size]

    got = step(requests, fresh_generators(), chosen)

    for request, temperature in zip(requests, chosen, strict=True):
        want = int(ROWS[request].argmax()) if temperature == 0 else alone(request, temperature)[0]
        assert got[request] == want, f"request {request} at temperature {temperature}"


# ---- rejection: valid in every respect but one, before any generator is touched ----


def rejects_before_drawing(argument, requests, generators, temperatures, logits=None):
    if logits is None:
        logits = torch.stack([ROWS[r] for r in IDS[: len(temperatures)]])
    before = {request: state(generator) for request, generator in generators.items()}
    with inputs_untouched(logits=logits):
        assert_rejects(
            lambda: drill.sample_batch(logits, requests, generators, temperatures),
            (ValueError, TypeError),
            argument,
        )
    for request, generator in generators.items():
        assert torch.equal(state(generator), before[request]), f"{request}'s generator moved"


def test_a_repeated_request_id_is_rejected():
    rejects_before_drawing("request_ids", ["a", "b", "a"], fresh_generators(), [1.0] * 3)


def test_a_request_without_a_generator_is_rejected():
    generators = fresh_generators()
    del generators["c"]
    rejects_before_drawing("generators", ["a", "b", "c"], generators, [1.0] * 3)


def test_two_requests_sharing_one_generator_are_rejected():
    generators = fresh_generators()
    generators["c"] = generators["a"]
    rejects_before_drawing("generators", ["a", "b", "c"], generators, [1.0] * 3)


@pytest.mark.parametrize("bad", [-0.5, math.nan])
def test_a_bad_temperature_in_a_later_row_is_rejected(bad):
    rejects_before_drawing("temperatures", ["a", "b", "c"], fresh_generators(), [1.0, 1.0, bad])


def test_temperatures_of_the_wrong_count_are_rejected():
    logits = torch.stack([ROWS[r] for r in "abc"])
    rejects_before_drawing("temperatures", ["a", "b", "c"], fresh_generators(), [1.0] * 2, logits)


def test_request_ids_of_the_wrong_count_are_rejected():
    rejects_before_drawing("request_ids", ["a", "b"], fresh_generators(), [1.0] * 3)


def test_a_nan_row_is_rejected_before_any_row_is_drawn():
    logits = torch.stack([ROWS[r] for r in "abc"])
    logits[2, 3] = math.nan
    rejects_before_drawing("logits", ["a", "b", "c"], fresh_generators(), [1.0] * 3, logits)
