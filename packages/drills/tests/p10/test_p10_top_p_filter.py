"""P10 top_p_filter(logits, p): keep the smallest most-probable set reaching p, the rest -inf."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import assume, given
from hypothesis import strategies as st

from gptlab_testkit import (
    boundary_settings,
    candidate,
    shares_storage,
    test_device,
)
from gptlab_testkit.oracles import assert_binds, inputs_untouched, seeded

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
    rows = result.reshape(-1, result.shape[-1]).tolist()
    return [{i for i, x in enumerate(row) if x > -math.inf} for row in rows]


def oracle_kept(logits: torch.Tensor, p: float) -> list[set[int]]:
    """Each row's nucleus from the float64 oracle; no row's mass may lie within rounding of p."""
    found = [nucleus(row, p) for row in logits.double().reshape(-1, logits.shape[-1]).tolist()]
    assert all(margin > 1e-4 for _, margin in found), "test data: a mass lies too close to p"
    return [want for want, _ in found]


def tensor(rows) -> torch.Tensor:
    return torch.tensor(rows, dtype=torch.float32, device=test_device())


def logs(probs: list[float]) -> list[float]:
    return [math.log(x) for x in probs]


@pytest.mark.clause("P10.4")
@pytest.mark.parametrize(
    ("p", "want"), [(0.45, {2}), (0.6, {2, 0}), (0.8, {2, 0, 4}), (0.9, {2, 0, 4, 1})]
)
def test_the_smallest_most_probable_prefix_reaching_p_is_kept(p, want):
    logits = tensor([logs([0.2, 0.1, 0.5, 0.05, 0.15])])

    got = drill.top_p_filter(logits, p)

    assert kept(got) == [want]
    assert got[0, sorted(want)].tolist() == logits[0, sorted(want)].tolist(), "kept logits changed"


@pytest.mark.clause("P10.4")
def test_the_keep_mask_lands_back_in_vocabulary_order():
    logits = tensor([logs([0.05, 0.5, 0.1, 0.2, 0.15])])
    order = torch.tensor([3, 0, 4, 1, 2], device=test_device())

    got = drill.top_p_filter(logits[:, order], 0.65)

    # the original tokens 1 (0.5) and 3 (0.2) now sit at positions 3 and 0
    assert kept(got) == [{3, 0}]


@pytest.mark.clause("P10.6")
def test_p_near_zero_keeps_only_the_most_probable_token():
    logits = seeded(3, 8, seed=1)

    got = drill.top_p_filter(logits, 1e-6)

    assert kept(got) == [{int(i)} for i in logits.argmax(-1)]


@pytest.mark.clause("P10.6", "P10.12")
def test_p_one_keeps_every_token():
    logits = seeded(2, 6, seed=2) * 5

    # the oracle first: the call's writes cannot reach it
    logits_given = logits.clone()
    got = drill.top_p_filter(logits, 1.0)

    assert torch.equal(got, logits_given)
    assert not shares_storage(got, logits), "the result aliases the caller's logits"


@pytest.mark.clause("P10.6")
def test_p_one_keeps_every_token_of_rows_whose_tail_holds_real_mass():
    # The least probable token holds about 1% of its row: no rounding question at p = 1.
    logits = tensor(
        [[0.0, 1.0, 2.0, 3.0, 4.0], [4.0, 3.0, 2.0, 1.0, 0.0], [1.0, 1.0, 1.0, 0.0, 2.0]]
    )

    got = drill.top_p_filter(logits, 1.0)

    assert kept(got) == [set(range(5))] * 3


@pytest.mark.clause("P10.4")
def test_tokens_tied_with_the_last_kept_token_are_all_kept():
    # [2, 1, 1, 0]: probabilities 0.53, 0.20, 0.20, 0.07; p=0.6 is reached inside the tie.
    logits = tensor([[2.0, 1.0, 1.0, 0.0], [1.0, 1.0, 1.0, 1.0]])

    got = drill.top_p_filter(logits, 0.6)

    assert kept(got) == [{0, 1, 2}, {0, 1, 2, 3}]


@pytest.mark.clause("P10.6")
def test_a_single_token_vocabulary_is_kept():
    got = drill.top_p_filter(tensor([[0.3], [-2.0]]), 0.5)

    assert kept(got) == [{0}, {0}]


@pytest.mark.clause("P10.6")
def test_already_masked_tokens_stay_masked_and_no_row_ends_empty():
    inf = -math.inf
    logits = tensor([[inf, 0.0, inf, 1.0], [inf, inf, 3.0, inf]])

    got = drill.top_p_filter(logits, 0.5)

    assert kept(got) == [{3}, {2}]


@pytest.mark.clause("P10.4", "P10.7")
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


@pytest.mark.clause("P10.12")
def test_the_logits_are_not_written():
    logits = seeded(3, 7, seed=3)

    with inputs_untouched(logits=logits):
        drill.top_p_filter(logits, 0.7)


@pytest.mark.clause("P10.3")
def test_half_precision_logits_keep_their_dtype():
    logits = tensor([logs([0.2, 0.1, 0.5, 0.05, 0.15])]).half()

    got = drill.top_p_filter(logits, 0.6)

    assert got.dtype == torch.float16
    assert kept(got) == [{2, 0}]


@pytest.mark.clause("P10.1")
def test_the_signature_takes_logits_and_p_positionally():
    logits = tensor([logs([0.2, 0.1, 0.5, 0.05, 0.15])])

    assert_binds(drill.top_p_filter, logits, 0.6)
    assert kept(drill.top_p_filter(logits, 0.6)) == [{2, 0}]


@pytest.mark.clause("P10.2", "P10.4")
@pytest.mark.parametrize("shape", [(7,), (2, 3, 7)], ids=["1-D", "3-D"])
def test_any_leading_dims_filter_each_vocabulary_row(shape):
    logits = seeded(*shape, seed=7) * 2

    # the oracle first: the call's writes cannot reach it
    want = oracle_kept(logits, 0.7)
    got = drill.top_p_filter(logits, 0.7)

    assert tuple(got.shape) == shape
    assert kept(got) == want


@pytest.mark.clause("P10.3", "P10.4")
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float64])
def test_other_floating_dtypes_keep_their_dtype(dtype):
    logits = (seeded(3, 9, seed=8, dtype=torch.float64) * 2).to(dtype)

    # the oracle first: the call's writes cannot reach it
    logits_given = logits.clone()
    want = oracle_kept(logits, 0.7)
    got = drill.top_p_filter(logits, 0.7)

    assert got.dtype == dtype
    assert kept(got) == want
    assert torch.equal(got[torch.isfinite(got)], logits_given[torch.isfinite(got)])


@pytest.mark.clause("P10.5")
@pytest.mark.parametrize("p", [0.5, 0.9, 0.95])
def test_bfloat16_logits_find_the_nucleus_a_float64_walk_finds(p):
    # 256 tokens: a bf16 running sum (8 significant bits) drifts by more than one token's mass.
    logits = (seeded(4, 256, seed=0, dtype=torch.float64) * 0.5).to(torch.bfloat16)

    # the oracle first: the call's writes cannot reach it
    want = oracle_kept(logits, p)
    got = drill.top_p_filter(logits, p)

    assert kept(got) == want


@pytest.mark.clause("P10.7")
def test_a_row_is_filtered_the_same_alone_and_in_a_batch():
    scales = torch.tensor([[1.0], [6.0], [0.1], [-3.0]], device=test_device())
    logits = seeded(4, 9, seed=9) * scales

    batched = drill.top_p_filter(logits, 0.8)

    for b in range(4):
        alone = drill.top_p_filter(logits[b : b + 1].clone(), 0.8)
        assert torch.equal(batched[b : b + 1], alone), f"row {b} depends on the other rows"


@pytest.mark.clause("P10.12")
def test_a_filtered_result_is_a_new_tensor():
    logits = seeded(3, 7, seed=10)

    got = drill.top_p_filter(logits, 0.5)

    assert not shares_storage(got, logits), "the result aliases the caller's logits"
