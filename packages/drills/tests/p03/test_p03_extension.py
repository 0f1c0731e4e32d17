"""P03 extension: this project's split_heads is a view (the contract allows a copy)."""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import assert_rejects, candidate
from gptlab_testkit.oracles import seeded

drill = candidate("DRILL_P03_MODULE")

pytestmark = [pytest.mark.owner("p03"), pytest.mark.extension]


@pytest.mark.clause("P03.10")
def test_split_is_a_view_of_a_contiguous_input():
    x = seeded(2, 3, 8, seed=13)

    got = drill.split_heads(x, 4)

    assert got.data_ptr() == x.data_ptr(), "split_heads copied a contiguous x"
    assert got.stride() == (3 * 8, 2, 8, 1), f"strides {got.stride()}"


@pytest.mark.clause("P03.10")
def test_a_zero_channel_input_is_rejected_naming_x():
    x = torch.zeros(2, 3, 0)

    assert_rejects(lambda: drill.split_heads(x, 2), ValueError, "x")


@pytest.mark.clause("P03.10")
def test_meta_tensors_are_split_and_merged_by_shape():
    x = torch.empty(2, 3, 8, device="meta")

    assert drill.merge_heads(drill.split_heads(x, 4)).shape == (2, 3, 8)
