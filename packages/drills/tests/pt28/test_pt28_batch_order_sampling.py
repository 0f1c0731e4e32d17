"""PT28 sample_batch(logits, request_ids, generators, temperatures): per-request draws."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from gptlab_testkit import BAD_VALUE, WRONG_KIND, assert_rejects, boundary_settings, candidate
from gptlab_testkit.oracles import (
    SAMPLERS,
    drawn_tokens,
    forbidding,
    inputs_untouched,
    seeded,
    seeded_generator,
)

drill = candidate("DRILL_PT28_MODULE")

pytestmark = [pytest.mark.owner("pt28")]  # each test says contract or extension

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


@pytest.mark.contract
@pytest.mark.clause("PT28.1", "PT28.2", "PT28.3", "PT28.4")
def test_each_row_draws_what_its_request_draws_alone():
    got = step(IDS, fresh_generators(), [1.0] * 5)

    assert got == {request: alone(request, 1.0)[0] for request in IDS}


@pytest.mark.contract
@pytest.mark.clause("PT28.4")
def test_each_row_uses_its_own_temperature():
    temperatures = [0.5, 1.0, 2.0, 0.7, 1.3]

    got = step(IDS, fresh_generators(), temperatures)

    want = {r: alone(r, t)[0] for r, t in zip(IDS, temperatures, strict=True)}
    assert got == want


@pytest.mark.contract
@pytest.mark.clause("PT28.5")
def test_reordering_the_batch_changes_no_requests_draw():
    in_order = step(IDS, fresh_generators(), [1.0] * 5)
    reordered = step(["d", "b", "e", "a", "c"], fresh_generators(), [1.0] * 5)

    assert reordered == in_order


@pytest.mark.contract
@pytest.mark.clause("PT28.5", "PT28.12")
def test_removing_other_requests_changes_nothing():
    full = step(IDS, fresh_generators(), [1.0] * 5)
    generators = fresh_generators()
    untouched = {request: state(generators[request]) for request in ("a", "b", "d")}

    subset = step(["e", "c"], generators, [1.0, 1.0])

    assert subset == {"e": full["e"], "c": full["c"]}
    for request, before in untouched.items():
        assert torch.equal(state(generators[request]), before), f"{request}'s generator moved"


@pytest.mark.contract
@pytest.mark.clause("PT28.5")
def test_a_requests_history_is_its_own_draws_across_changing_batches():
    generators = fresh_generators()
    batches = [IDS, ["c", "a"], ["e", "d", "c", "b", "a"], ["c"]]
    seen: dict[str, list[int]] = {request: [] for request in IDS}

    for requests in batches:
        for request, token in step(requests, generators, [1.0] * len(requests)).items():
            seen[request].append(token)

    for request, tokens in seen.items():
        assert tokens == alone(request, 1.0, steps=len(tokens)), f"request {request}"


@pytest.mark.contract
@pytest.mark.clause("PT28.6")
def test_greedy_rows_take_the_argmax_and_leave_their_generator_alone():
    generators = fresh_generators()
    before = {request: state(generators[request]) for request in ("b", "d")}

    got = step(IDS, generators, [1.0, 0.0, 1.0, 0.0, 1.0])

    for request in ("b", "d"):
        assert got[request] == int(ROWS[request].argmax())
        assert torch.equal(state(generators[request]), before[request]), f"greedy {request} drew"
    assert {r: got[r] for r in "ace"} == {r: alone(r, 1.0)[0] for r in "ace"}


@pytest.mark.contract
@pytest.mark.clause("PT28.6")
def test_an_all_greedy_batch_never_draws():
    with forbidding(*SAMPLERS, what="an all-greedy sample_batch"):
        got = step(IDS, fresh_generators(), [0.0] * 5)

    assert got == {request: int(ROWS[request].argmax()) for request in IDS}


@pytest.mark.contract
@pytest.mark.clause("PT28.6")
def test_a_sample_after_a_greedy_step_is_the_requests_first_draw():
    generators = fresh_generators()
    step(["a", "b"], generators, [0.0, 1.0])  # a is greedy this step

    got = step(["b", "a"], generators, [1.0, 1.0])

    assert got["a"] == alone("a", 1.0)[0]
    assert got["b"] == alone("b", 1.0, steps=2)[1]


@pytest.mark.contract
@pytest.mark.clause("PT28.4", "PT28.5", "PT28.6")
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


def rejects_before_drawing(
    argument, requests, generators, temperatures, logits=None, errors=BAD_VALUE, values=()
):
    if logits is None:
        logits = torch.stack([ROWS[r] for r in IDS[: len(temperatures)]])
    before = {request: state(generator) for request, generator in generators.items()}
    kept = {"logits": logits} if isinstance(logits, torch.Tensor) and not logits.is_meta else {}
    with inputs_untouched(**kept):
        assert_rejects(
            lambda: drill.sample_batch(logits, requests, generators, temperatures),
            errors,
            argument,
            values=values,
        )
    for request, generator in generators.items():
        assert torch.equal(state(generator), before[request]), f"{request}'s generator moved"


@pytest.mark.contract
@pytest.mark.clause("PT28.7")
def test_a_repeated_request_id_is_rejected():
    rejects_before_drawing(
        "request_ids", ["a", "b", "a"], fresh_generators(), [1.0] * 3, values=("'a'",)
    )


@pytest.mark.contract
@pytest.mark.clause("PT28.1", "PT28.4")
def test_temperatures_may_come_as_a_tensor():
    temperatures = torch.tensor([0.5, 0.0, 1.5])

    try:
        got = step(["c", "a", "e"], fresh_generators(), temperatures)
    except (TypeError, ValueError) as error:
        raise AssertionError(f"a [B] tensor of temperatures was refused: {error}") from error

    assert got == {"c": alone("c", 0.5)[0], "a": int(ROWS["a"].argmax()), "e": alone("e", 1.5)[0]}


@pytest.mark.contract
@pytest.mark.clause("PT28.2", "PT28.3", "PT28.12")
def test_the_token_ids_are_a_new_integer_tensor():
    logits = torch.stack([ROWS[r] for r in "abc"])
    with inputs_untouched(logits=logits):
        result = drill.sample_batch(logits, ["a", "b", "c"], fresh_generators(), [1.0, 0.0, 2.0])
    drawn_tokens(result, 3)  # [3] or [3, 1], integer
    assert result.untyped_storage().data_ptr() != logits.untyped_storage().data_ptr()


@pytest.mark.contract
@pytest.mark.clause("PT28.12")
def test_extra_generators_and_the_greedy_rows_generators_stay_untouched():
    generators = fresh_generators()
    before = {request: state(generator) for request, generator in generators.items()}

    step(["b", "d"], generators, [1.0, 0.0])

    for request in ("a", "c", "d", "e"):
        assert torch.equal(state(generators[request]), before[request]), f"{request} moved"
    probe = generators["b"]
    after_one = seeded_generator(SEEDS["b"])
    torch.multinomial(torch.ones(1, 9), 1, generator=after_one)  # one draw of 9 categories
    assert torch.equal(state(probe), state(after_one)), "b's generator moved by more than one draw"


@pytest.mark.contract
@pytest.mark.clause("PT28.7")
def test_a_repeated_request_id_later_in_the_batch_is_rejected():
    rejects_before_drawing("request_ids", ["a", "b", "c", "b"], fresh_generators(), [1.0] * 4)


# ---- extension: the reference's doors past the contract ----


@pytest.mark.extension
@pytest.mark.clause("PT28.13")
@pytest.mark.parametrize(
    ("argument", "case"),
    [
        ("logits", "meta"),
        ("temperatures", "a bool"),
        ("temperatures", "a string"),
        ("request_ids", "unhashable"),
        ("generators", "not a mapping"),
    ],
)
def test_the_reference_rejects_inputs_the_contract_leaves_undefined(argument, case):
    requests, temperatures, logits = ["a", "b", "c"], [1.0, 1.0, 1.0], None
    generators = fresh_generators()
    if case == "meta":
        logits = torch.empty(3, 9, device="meta")
    elif case == "a bool":
        temperatures = [1.0, True, 1.0]
    elif case == "a string":
        temperatures = [1.0, 1.0, "1.0"]
    elif case == "unhashable":
        requests = ["a", ["b"], "c"]
    else:
        generators = list(generators.values())
    if isinstance(generators, dict):
        rejects_before_drawing(argument, requests, generators, temperatures, logits, WRONG_KIND)
    else:
        before = [state(g) for g in generators]
        stacked = torch.stack([ROWS[r] for r in "abc"])
        assert_rejects(
            lambda: drill.sample_batch(stacked, requests, generators, temperatures),
            WRONG_KIND,
            argument,
        )
        assert all(torch.equal(state(g), b) for g, b in zip(generators, before, strict=True))


@pytest.mark.contract
@pytest.mark.clause("PT28.4")
@pytest.mark.parametrize("temperature", [0.2, 5.0], ids=["sharp", "flat"])
def test_three_steps_at_a_far_temperature_draw_what_each_request_draws_alone(temperature):
    generators = fresh_generators()
    seen = {request: [] for request in IDS}
    for _ in range(3):
        for request, token in step(IDS, generators, [temperature] * 5).items():
            seen[request].append(token)
    assert seen == {request: alone(request, temperature, steps=3) for request in IDS}


@pytest.mark.contract
@pytest.mark.clause("PT28.4")
def test_a_row_with_one_finite_logit_draws_that_token():
    logits = torch.stack([ROWS[r] for r in "ab"])
    logits[1] = -math.inf
    logits[1, 6] = 0.5
    generators = fresh_generators()

    got = drawn_tokens(drill.sample_batch(logits, ["a", "b"], generators, [1.0, 1.3]), 2)

    assert got == [alone("a", 1.0)[0], 6], f"got {got}"


@pytest.mark.contract
@pytest.mark.clause("PT28.4", "PT28.6")
def test_a_vocabulary_of_one_token_always_gives_token_zero():
    logits = torch.tensor([[0.3], [-2.0]])
    got = drill.sample_batch(logits, ["a", "b"], fresh_generators(), [1.0, 0.0])
    assert drawn_tokens(got, 2) == [0, 0]
