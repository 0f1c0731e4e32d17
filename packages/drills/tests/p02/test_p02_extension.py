"""P02 extension: what this project's can_view_without_copy does outside the graded contract."""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import assert_rejects, candidate

drill = candidate("DRILL_P02_MODULE")

pytestmark = [pytest.mark.owner("p02"), pytest.mark.extension]


@pytest.mark.clause("P02.10")
def test_a_sparse_tensor_is_rejected_naming_x():
    x = torch.eye(4).to_sparse()

    assert_rejects(lambda: drill.can_view_without_copy(x, (16,)), ValueError, "x")


@pytest.mark.clause("P02.10")
def test_a_meta_tensor_is_answered_from_its_strides():
    x = torch.empty(3, 4, device="meta").t()

    assert drill.can_view_without_copy(x, (2, 2, 3)) is True
    assert drill.can_view_without_copy(x, (12,)) is False


@pytest.mark.clause("P02.10")
def test_a_zero_element_tensor_views_as_any_shape_of_zero_elements():
    x = torch.empty(0, 4).t()

    assert drill.can_view_without_copy(x, (2, 0, 2)) is True
