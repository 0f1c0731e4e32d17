"""P09 top_k_filter(logits, k): keep logits >= each row's k-th largest, the rest -inf."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from gptlab_testkit import assert_rejects, boundary_settings, candidate, shares_storage, test_device
from gptlab_testkit.oracles import inputs_untouched, seeded

drill = candidate("DRILL_P09_MODULE")

pytestmark = [pytest.mark.owner("p09"), pytest.mark.contract]


def loop_top_k(logits: torch.Tensor, k: int) -> list[list[float]]:
    """The oracle: per row, the k-th largest by sorting a Python list; ties with it kept."""
    out = []
    for row in logits.tolist():
        kth = sorted(row, reverse=True)[k - 1] if k else -math.inf
        out.append([x if x >= kth else -math.inf for x in row])
    return out


def tensor(rows) -> torch.Tensor:
    return torch.tensor(rows, dtype=torch.float32, device=test_device())


def test_k_one_keeps_only_each_rows_maximum():
    logits = seeded(3, 6, seed=1)

    got = drill.top_k_filter(logits, 1)

    assert got.tolist() == loop_top_k(logits, 1)
    assert (torch.isfinite(got).sum(-1) == 1).all()


def test_k_equal_to_the_vocabulary_keeps_everything_in_a_new_tensor():
    logits = seeded(2, 5, seed=2)

    got = drill.top_k_filter(logits, 5)

    assert torch.equal(got, logits)
    assert not shares_storage(got, logits), "the result aliases the caller's logits"


def test_k_zero_means_no_filtering():
    logits = seeded(2, 5, seed=3)

    got = drill.top_k_filter(logits, 0)

    assert torch.equal(got, logits)
    assert not shares_storage(got, logits), "the result aliases the caller's logits"


def test_tokens_tied_with_the_kth_largest_are_all_kept():
    logits = tensor([[3.0, 1.0, 2.0, 2.0, 0.0], [5.0, 5.0, 5.0, 1.0, 5.0]])

    got = drill.top_k_filter(logits, 2)

    inf = -math.inf
    assert got.tolist() == [[3.0, inf, 2.0, 2.0, inf], [5.0, 5.0, 5.0, inf, 5.0]]


def test_the_kept_set_does_not_depend_on_token_order():
    logits = tensor([[1.0, 4.0, 2.0, 4.0, 2.0, 0.0]])
    order = torch.tensor([5, 2, 0, 4, 3, 1], device=test_device())

    for k in range(1, 7):
        got = drill.top_k_filter(logits, k)
        permuted = drill.top_k_filter(logits[:, order], k)
        assert torch.equal(permuted, got[:, order]), f"k={k}: a permutation changed the kept set"


@boundary_settings(25)
@given(data=st.data())
def test_any_row_matches_the_loop_oracle_ties_included(data):
    B = data.draw(st.integers(1, 4), label="B")
    V = data.draw(st.integers(1, 10), label="V")
    k = data.draw(st.integers(0, V), label="k")
    values = st.lists(st.integers(-3, 3), min_size=V, max_size=V)  # small ints: many ties
    logits = tensor([data.draw(values, label=f"logits[{b}]") for b in range(B)])

    got = drill.top_k_filter(logits, k)

    assert got.tolist() == loop_top_k(logits, k)


def test_each_row_uses_its_own_kth_largest():
    logits = tensor([[10.0, 9.0, 8.0, 7.0], [0.5, 3.0, 2.0, 4.0]])

    got = drill.top_k_filter(logits, 2)

    inf = -math.inf
    assert got.tolist() == [[10.0, 9.0, inf, inf], [inf, 3.0, inf, 4.0]]


def test_the_logits_are_not_written():
    logits = seeded(3, 7, seed=4)

    with inputs_untouched(logits=logits):
        drill.top_k_filter(logits, 3)


def test_half_precision_logits_keep_their_dtype():
    logits = seeded(2, 6, seed=5, dtype=torch.float16)

    got = drill.top_k_filter(logits, 2)

    assert got.dtype == torch.float16
    assert got.tolist() == loop_top_k(logits, 2)


# ---- rejection: valid in every respect but one ----


@pytest.mark.parametrize("k", [-1, 7])
def test_k_outside_zero_to_the_vocabulary_is_rejected(k):
    logits = seeded(2, 6, seed=6)
    with inputs_untouched(logits=logits):
        assert_rejects(lambda: drill.top_k_filter(logits, k), (ValueError, TypeError), "k")


def test_a_fractional_k_is_rejected():
    logits = seeded(2, 6, seed=7)
    assert_rejects(lambda: drill.top_k_filter(logits, 2.5), (ValueError, TypeError), "k")
