"""P10 top_p_filter(logits, p): keep the smallest most-probable set reaching p, the rest -inf."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import assume, given
from hypothesis import strategies as st

from gptlab_testkit import assert_rejects, boundary_settings, candidate, shares_storage, test_device
from gptlab_testkit.oracles import inputs_untouched, seeded

drill = candidate("DRILL_P10_MODULE")

pytestmark = [pytest.mark.owner("p10"), pytest.mark.contract]


def nucleus(row: list[float], p: float) -> tuple[set[int], float]:
    """The oracle in float64: walk tokens from most to least probable until the mass
    reaches p; keep every token whose logit ties with or beats the last one walked.
    Also returns how close any cumulative mass came to p (a margin for float rounding)."""
    top = max(row)
    weights = [math.exp(x - top) for x in row]
    total = sum(weights)
    mass, boundary, margin = 0.0, -math.inf, math.inf
    for i in sorted(range(len(row)), key=lambda i: -row[i]):
        mass += weights[i] / total
        margin = min(margin, abs(mass - p))
        boundary = row[i]
        if mass >= p:
            break
    return {i for i, x in enumerate(row) if x >= boundary and x > -math.inf}, margin


def kept(result: torch.Tensor) -> list[set[int]]:
    return [{i for i, x in enumerate(row) if x > -math.inf} for row in result.tolist()]


def tensor(rows) -> torch.Tensor:
    return torch.tensor(rows, dtype=torch.float32, device=test_device())


def logs(probs: list[float]) -> list[float]:
    return [math.log(x) for x in probs]


@pytest.mark.parametrize(
    ("p", "want"), [(0.45, {2}), (0.6, {2, 0}), (0.8, {2, 0, 4}), (0.9, {2, 0, 4, 1})]
)
def test_the_smallest_most_probable_prefix_reaching_p_is_kept(p, want):
    logits = tensor([logs([0.2, 0.1, 0.5, 0.05, 0.15])])

    got = drill.top_p_filter(logits, p)

    assert kept(got) == [want]
    assert got[0, sorted(want)].tolist() == logits[0, sorted(want)].tolist(), "kept logits changed"


def test_the_keep_mask_lands_back_in_vocabulary_order():
    logits = tensor([logs([0.05, 0.5, 0.1, 0.2, 0.15])])
    order = torch.tensor([3, 0, 4, 1, 2], device=test_device())

    got = drill.top_p_filter(logits[:, order], 0.65)

    # the original tokens 1 (0.5) and 3 (0.2) now sit at positions 3 and 0
    assert kept(got) == [{3, 0}]


def test_p_near_zero_keeps_only_the_most_probable_token():
    logits = seeded(3, 8, seed=1)

    got = drill.top_p_filter(logits, 1e-6)

    assert kept(got) == [{int(i)} for i in logits.argmax(-1)]


def test_p_one_keeps_every_token():
    logits = seeded(2, 6, seed=2) * 5

    got = drill.top_p_filter(logits, 1.0)

    assert torch.equal(got, logits)
    assert not shares_storage(got, logits), "the result aliases the caller's logits"


def test_tokens_tied_with_the_last_kept_token_are_all_kept():
    # [2, 1, 1, 0]: probabilities 0.53, 0.20, 0.20, 0.07; p=0.6 is reached inside the tie.
    logits = tensor([[2.0, 1.0, 1.0, 0.0], [1.0, 1.0, 1.0, 1.0]])

    got = drill.top_p_filter(logits, 0.6)

    assert kept(got) == [{0, 1, 2}, {0, 1, 2, 3}]


def test_a_single_token_vocabulary_is_kept():
    got = drill.top_p_filter(tensor([[0.3], [-2.0]]), 0.5)

    assert kept(got) == [{0}, {0}]


def test_already_masked_tokens_stay_masked_and_no_row_ends_empty():
    inf = -math.inf
    logits = tensor([[inf, 0.0, inf, 1.0], [inf, inf, 3.0, inf]])

    got = drill.top_p_filter(logits, 0.5)

    assert kept(got) == [{3}, {2}]


@boundary_settings(25)
@given(data=st.data())
def test_any_row_matches_the_loop_oracle(data):
    B = data.draw(st.integers(1, 4), label="B")
    V = data.draw(st.integers(1, 10), label="V")
    p = data.draw(st.floats(0.01, 0.99), label="p")
    logits = seeded(B, V, seed=data.draw(st.integers(0, 2**16), label="seed")) * 2
    oracle = [nucleus(row, p) for row in logits.tolist()]
    assume(all(margin > 1e-4 for _, margin in oracle))  # no row's mass within rounding of p

    got = drill.top_p_filter(logits, p)

    assert kept(got) == [want for want, _ in oracle]
    assert torch.equal(got[torch.isfinite(got)], logits[torch.isfinite(got)])


def test_the_logits_are_not_written():
    logits = seeded(3, 7, seed=3)

    with inputs_untouched(logits=logits):
        drill.top_p_filter(logits, 0.7)


def test_half_precision_logits_keep_their_dtype():
    logits = tensor([logs([0.2, 0.1, 0.5, 0.05, 0.15])]).half()

    got = drill.top_p_filter(logits, 0.6)

    assert got.dtype == torch.float16
    assert kept(got) == [{2, 0}]


# ---- rejection: valid in every respect but one ----


@pytest.mark.parametrize("p", [0.0, -0.2, 1.01, math.nan])
def test_p_outside_zero_to_one_is_rejected(p):
    logits = seeded(2, 5, seed=4)
    with inputs_untouched(logits=logits):
        assert_rejects(lambda: drill.top_p_filter(logits, p), (ValueError, TypeError), "p")
