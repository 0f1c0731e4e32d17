"""PT28 extension: this project's rules beyond the kit's contract (tested apart, never scored)."""

from __future__ import annotations

import math

import pytest
import torch

from gptlab_testkit import BAD_VALUE, WRONG_KIND, assert_rejects, candidate
from gptlab_testkit.oracles import (
    drawn_tokens,
    inputs_untouched,
    seeded,
    seeded_generator,
)

drill = candidate("DRILL_PT28_MODULE")

pytestmark = [pytest.mark.owner("pt28"), pytest.mark.extension]

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


def state(generator: torch.Generator) -> torch.Tensor:
    return generator.get_state().clone()


@pytest.mark.clause("PT28.8")
def test_a_request_without_a_generator_is_rejected():
    generators = fresh_generators()
    del generators["c"]
    rejects_before_drawing("generators", ["a", "b", "c"], generators, [1.0] * 3)


@pytest.mark.clause("PT28.8")
def test_two_requests_sharing_one_generator_are_rejected():
    generators = fresh_generators()
    generators["c"] = generators["a"]
    rejects_before_drawing("generators", ["a", "b", "c"], generators, [1.0] * 3)


@pytest.mark.clause("PT28.9")
@pytest.mark.parametrize("bad", [-0.5, math.nan])
def test_a_bad_temperature_in_a_later_row_is_rejected(bad):
    rejects_before_drawing(
        "temperatures", ["a", "b", "c"], fresh_generators(), [1.0, 1.0, bad], values=(bad,)
    )


@pytest.mark.clause("PT28.9")
def test_temperatures_of_the_wrong_count_are_rejected():
    logits = torch.stack([ROWS[r] for r in "abc"])
    rejects_before_drawing("temperatures", ["a", "b", "c"], fresh_generators(), [1.0] * 2, logits)


@pytest.mark.clause("PT28.14")
def test_request_ids_of_the_wrong_count_are_rejected():
    rejects_before_drawing("request_ids", ["a", "b"], fresh_generators(), [1.0] * 3)


@pytest.mark.clause("PT28.11")
def test_a_nan_row_is_rejected_before_any_row_is_drawn():
    logits = torch.stack([ROWS[r] for r in "abc"])
    logits[2, 3] = math.nan
    rejects_before_drawing("logits", ["a", "b", "c"], fresh_generators(), [1.0] * 3, logits)


@pytest.mark.clause("PT28.9")
@pytest.mark.parametrize("bad", [math.inf, -math.inf, -1e-9], ids=["+inf", "-inf", "tiny negative"])
def test_a_temperature_not_finite_or_below_zero_in_row_two_is_rejected(bad):
    rejects_before_drawing("temperatures", ["a", "b", "c"], fresh_generators(), [0.0, 1.0, bad])


@pytest.mark.clause("PT28.10")
@pytest.mark.parametrize(
    ("logits", "errors"),
    [
        (lambda: torch.stack([ROWS[r] for r in "abc"]).to(torch.int64), WRONG_KIND),
        (lambda: torch.stack([ROWS[r] for r in "abc"])[None], BAD_VALUE),
        (lambda: ROWS["a"].clone(), BAD_VALUE),
    ],
    ids=["integer logits", "3-D logits", "1-D logits"],
)
def test_logits_that_are_not_2_d_floating_are_rejected(logits, errors):
    rejects_before_drawing(
        "logits", ["a", "b", "c"], fresh_generators(), [1.0] * 3, logits(), errors=errors
    )


@pytest.mark.clause("PT28.11")
@pytest.mark.parametrize("row", ["+inf", "all -inf"])
def test_a_row_with_inf_or_no_finite_logit_is_rejected(row):
    logits = torch.stack([ROWS[r] for r in "abc"])
    if row == "+inf":
        logits[1, 4] = math.inf
    else:
        logits[2] = -math.inf
    rejects_before_drawing("logits", ["a", "b", "c"], fresh_generators(), [1.0] * 3, logits)


@pytest.mark.clause("PT28.11")
def test_minus_inf_logits_rule_tokens_out_but_are_allowed():
    logits = torch.stack([ROWS[r] for r in "ab"])
    logits[1, ::2] = -math.inf
    generators = fresh_generators()
    got = drawn_tokens(drill.sample_batch(logits, ["a", "b"], generators, [1.0, 1.0]), 2)
    probs = torch.softmax(logits[1:].float(), dim=-1)
    want = int(torch.multinomial(probs, 1, generator=seeded_generator(SEEDS["b"])))
    assert got[1] == want and got[1] % 2 == 1, f"row 1 drew {got[1]}, want {want}"


@pytest.mark.clause("PT28.11")
def test_an_empty_vocabulary_is_rejected():
    logits = torch.empty(3, 0)
    rejects_before_drawing("logits", ["a", "b", "c"], fresh_generators(), [1.0] * 3, logits)


@pytest.mark.clause("PT28.15")
@pytest.mark.parametrize("tiny", [1e-50, 5e-324], ids=repr)
def test_a_positive_temperature_that_is_zero_in_fp32_in_a_later_row_is_rejected(tiny):
    # Rows a and b would draw first: their generators must not have moved.
    rejects_before_drawing(
        "temperatures", ["a", "b", "c"], fresh_generators(), [1.0, 1.0, tiny], values=(tiny,)
    )


@pytest.mark.clause("PT28.15")
def test_a_temperature_that_overflows_a_later_rows_logits_is_rejected():
    logits = torch.stack([ROWS[r] for r in "abc"])
    assert float(logits[2].max()) > 1e-2  # / 1e-40 is beyond fp32's largest, 3.4e38
    rejects_before_drawing(
        "temperatures", ["a", "b", "c"], fresh_generators(), [1.0, 0.5, 1e-40], logits
    )
