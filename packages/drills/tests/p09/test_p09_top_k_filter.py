"""P09 top_k_filter(logits, k): keep logits >= each row's k-th largest, the rest -inf."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from gptlab_testkit import (
    boundary_settings,
    candidate,
    shares_storage,
    test_device,
)
from gptlab_testkit.oracles import assert_binds, inputs_untouched, seeded

drill = candidate("DRILL_P09_MODULE")

pytestmark = [pytest.mark.owner("p09"), pytest.mark.contract]

INF = -math.inf


def loop_top_k(logits: torch.Tensor, k: int) -> list:
    """The oracle: per row (the last dim), the k-th largest by sorting a Python list; ties kept."""
    if logits.dim() > 1:
        return [loop_top_k(row, k) for row in logits]
    row = logits.tolist()
    kth = sorted(row, reverse=True)[k - 1] if k else -math.inf
    return [x if x >= kth else -math.inf for x in row]


def tensor(rows) -> torch.Tensor:
    return torch.tensor(rows, dtype=torch.float32, device=test_device())


@pytest.mark.clause("P09.1")
def test_the_signature_takes_logits_and_k_positionally():
    logits = seeded(2, 5, seed=20)

    assert_binds(drill.top_k_filter, logits, 2)
    assert drill.top_k_filter(logits, 2).tolist() == loop_top_k(logits, 2)


@pytest.mark.clause("P09.4")
def test_k_one_keeps_only_each_rows_maximum():
    logits = seeded(3, 6, seed=1)

    got = drill.top_k_filter(logits, 1)

    assert got.tolist() == loop_top_k(logits, 1)
    assert (torch.isfinite(got).sum(-1) == 1).all()


@pytest.mark.clause("P09.6", "P09.11")
def test_k_equal_to_the_vocabulary_keeps_everything_in_a_new_tensor():
    logits = seeded(2, 5, seed=2)

    # the oracle first: the call's writes cannot reach it
    logits_given = logits.clone()
    got = drill.top_k_filter(logits, 5)

    assert torch.equal(got, logits_given)
    assert not shares_storage(got, logits), "the result aliases the caller's logits"


@pytest.mark.clause("P09.6", "P09.11")
def test_k_zero_means_no_filtering():
    logits = seeded(2, 5, seed=3)

    # the oracle first: the call's writes cannot reach it
    logits_given = logits.clone()
    got = drill.top_k_filter(logits, 0)

    assert torch.equal(got, logits_given)
    assert not shares_storage(got, logits), "the result aliases the caller's logits"


@pytest.mark.clause("P09.4")
def test_tokens_tied_with_the_kth_largest_are_all_kept():
    logits = tensor([[3.0, 1.0, 2.0, 2.0, 0.0], [5.0, 5.0, 5.0, 1.0, 5.0]])

    got = drill.top_k_filter(logits, 2)

    assert got.tolist() == [[3.0, INF, 2.0, 2.0, INF], [5.0, 5.0, 5.0, INF, 5.0]]


@pytest.mark.clause("P09.4")
def test_the_kept_set_does_not_depend_on_token_order():
    logits = tensor([[1.0, 4.0, 2.0, 4.0, 2.0, 0.0]])
    order = torch.tensor([5, 2, 0, 4, 3, 1], device=test_device())

    for k in range(1, 7):
        got = drill.top_k_filter(logits, k)
        permuted = drill.top_k_filter(logits[:, order], k)
        assert torch.equal(permuted, got[:, order]), f"k={k}: a permutation changed the kept set"


@pytest.mark.clause("P09.4", "P09.5", "P09.6")
@boundary_settings(25)
@given(data=st.data())
def test_any_row_matches_the_loop_oracle_ties_included(data):
    B = data.draw(st.integers(1, 4), label="B")
    V = data.draw(st.integers(1, 10), label="V")
    k = data.draw(st.integers(0, V), label="k")
    values = st.lists(st.integers(-3, 3), min_size=V, max_size=V)  # small ints: many ties
    logits = tensor([data.draw(values, label=f"logits[{b}]") for b in range(B)])

    # the oracle first: the call's writes cannot reach it
    want = loop_top_k(logits, k)
    got = drill.top_k_filter(logits, k)

    assert got.tolist() == want


@pytest.mark.clause("P09.5")
def test_each_row_uses_its_own_kth_largest():
    logits = tensor([[10.0, 9.0, 8.0, 7.0], [0.5, 3.0, 2.0, 4.0]])

    got = drill.top_k_filter(logits, 2)

    assert got.tolist() == [[10.0, 9.0, INF, INF], [INF, 3.0, INF, 4.0]]


@pytest.mark.clause("P09.5")
def test_a_row_is_filtered_the_same_alone_and_in_a_batch():
    logits = seeded(4, 9, seed=21) * torch.tensor([[1.0], [100.0], [0.01], [-3.0]])

    batched = drill.top_k_filter(logits, 3)

    for b in range(4):
        alone = drill.top_k_filter(logits[b : b + 1].clone(), 3)
        assert torch.equal(batched[b : b + 1], alone), f"row {b} depends on the other rows"


@pytest.mark.clause("P09.2", "P09.4", "P09.6")
@pytest.mark.parametrize("k", [0, 2, 7])
@pytest.mark.parametrize("shape", [(7,), (2, 3, 7)], ids=["1-D", "3-D"])
def test_any_leading_dims_filter_each_vocabulary_row(shape, k):
    logits = seeded(*shape, seed=22)

    # the oracle first: the call's writes cannot reach it
    want = loop_top_k(logits, k)
    got = drill.top_k_filter(logits, k)

    assert tuple(got.shape) == shape
    assert got.tolist() == want


@pytest.mark.clause("P09.11")
def test_the_logits_are_not_written():
    logits = seeded(3, 7, seed=4)

    with inputs_untouched(logits=logits):
        drill.top_k_filter(logits, 3)


@pytest.mark.clause("P09.11")
def test_a_filtered_result_is_a_new_tensor():
    logits = seeded(3, 7, seed=23)

    got = drill.top_k_filter(logits, 3)

    assert not shares_storage(got, logits), "the result aliases the caller's logits"


@pytest.mark.clause("P09.3", "P09.4")
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float64])
def test_other_floating_dtypes_keep_their_dtype(dtype):
    logits = seeded(2, 6, seed=5, dtype=dtype)

    # the oracle first: the call's writes cannot reach it
    want = loop_top_k(logits, 2)
    got = drill.top_k_filter(logits, 2)

    assert got.dtype == dtype
    assert got.tolist() == want
