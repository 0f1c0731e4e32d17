"""P03 extension: this project's split_heads is a view (the contract allows a copy)."""

from __future__ import annotations

import pytest

from gptlab_testkit import candidate
from gptlab_testkit.oracles import seeded

drill = candidate("DRILL_P03_MODULE")

pytestmark = [pytest.mark.owner("p03"), pytest.mark.extension]


def test_split_is_a_view_of_a_contiguous_input():
    x = seeded(2, 3, 8, seed=13)

    got = drill.split_heads(x, 4)

    assert got.data_ptr() == x.data_ptr(), "split_heads copied a contiguous x"
    assert got.stride() == (3 * 8, 2, 8, 1), f"strides {got.stride()}"
