"""P03 extension: this project's split_heads is a view (the contract allows a copy)."""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import WRONG_KIND, assert_rejects, candidate, shares_storage
from gptlab_testkit.oracles import inputs_untouched, seeded

drill = candidate("DRILL_P03_MODULE")

pytestmark = [pytest.mark.owner("p03"), pytest.mark.extension]


@pytest.mark.clause("P03.10")
def test_split_is_a_view_of_a_contiguous_input():
    x = seeded(2, 3, 8, seed=13)

    got = drill.split_heads(x, 4)

    assert shares_storage(got, x), "split_heads copied a contiguous x"
    assert got.stride() == (3 * 8, 2, 8, 1), f"strides {got.stride()}"


@pytest.mark.clause("P03.10")
def test_a_zero_channel_input_is_rejected_naming_x():
    x = torch.zeros(2, 3, 0)

    assert_rejects(lambda: drill.split_heads(x, 2), ValueError, "x")


@pytest.mark.clause("P03.10")
def test_meta_tensors_are_split_and_merged_by_shape():
    x = torch.empty(2, 3, 8, device="meta")

    assert drill.merge_heads(drill.split_heads(x, 4)).shape == (2, 3, 8)


@pytest.mark.clause("P03.7")
@pytest.mark.parametrize("heads", [0, -2])
def test_a_head_count_below_one_is_rejected(heads):
    x = seeded(2, 3, 8, seed=10)
    with inputs_untouched(x=x):
        assert_rejects(lambda: drill.split_heads(x, heads), ValueError, "heads")


@pytest.mark.clause("P03.8")
def test_split_of_a_tensor_that_is_not_three_dimensional_is_rejected():
    x = seeded(2, 3, 4, 2, seed=11)
    with inputs_untouched(x=x):
        assert_rejects(lambda: drill.split_heads(x, 2), ValueError, "x")


@pytest.mark.clause("P03.8")
def test_merge_of_a_tensor_that_is_not_four_dimensional_is_rejected():
    x = seeded(2, 3, 8, seed=12)
    with inputs_untouched(x=x):
        assert_rejects(lambda: drill.merge_heads(x), ValueError, "x")


@pytest.mark.clause("P03.7")
@pytest.mark.parametrize("heads", [True, 2.0, None, "2"], ids=repr)
def test_a_head_count_that_is_not_an_int_is_rejected(heads):
    x = seeded(2, 3, 8, seed=13)
    with inputs_untouched(x=x):
        assert_rejects(lambda: drill.split_heads(x, heads), WRONG_KIND, "heads")


@pytest.mark.clause("P03.8")
@pytest.mark.parametrize("x", [None, [[[1.0, 2.0]]], 3.0], ids=repr)
def test_an_x_that_is_not_a_tensor_is_rejected_by_both(x):
    assert_rejects(lambda: drill.split_heads(x, 2), WRONG_KIND, "x")
    assert_rejects(lambda: drill.merge_heads(x), WRONG_KIND, "x")


@pytest.mark.clause("P03.8")
def test_merge_of_a_five_dimensional_tensor_is_rejected():
    x = seeded(2, 2, 3, 4, 1, seed=14)
    with inputs_untouched(x=x):
        assert_rejects(lambda: drill.merge_heads(x), ValueError, "x")
