"""P02 extension: what this project's can_view_without_copy does outside the graded contract."""

from __future__ import annotations

import math

import pytest
import torch

from gptlab_testkit import WRONG_KIND, assert_rejects, candidate, test_device
from gptlab_testkit.oracles import inputs_untouched

drill = candidate("DRILL_P02_MODULE")

pytestmark = [pytest.mark.owner("p02"), pytest.mark.extension]


def grid(*shape: int) -> torch.Tensor:
    return torch.arange(math.prod(shape), dtype=torch.float32, device=test_device()).reshape(shape)


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


@pytest.mark.clause("P02.6")
@pytest.mark.parametrize("new_shape", [(5, 2), (13,)])
def test_a_shape_with_another_element_count_is_rejected(new_shape):
    x = grid(3, 4)
    with inputs_untouched(x=x):
        assert_rejects(lambda: drill.can_view_without_copy(x, new_shape), ValueError, "new_shape")


@pytest.mark.clause("P02.7")
@pytest.mark.parametrize(
    "new_shape",
    [None, 12, "12", (2.0, 6), (2, 6.0), (True, 12), (-2, -6), (-1, 12)],
    ids=repr,
)
def test_a_new_shape_that_is_not_non_negative_ints_is_rejected(new_shape):
    x = grid(3, 4)
    with inputs_untouched(x=x):
        assert_rejects(lambda: drill.can_view_without_copy(x, new_shape), WRONG_KIND, "new_shape")


@pytest.mark.clause("P02.7")
def test_a_negative_size_is_a_value_error():
    x = grid(3, 4)

    assert_rejects(lambda: drill.can_view_without_copy(x, (-3, -4)), ValueError, "new_shape")


@pytest.mark.clause("P02.8")
@pytest.mark.parametrize("x", [[[1.0, 2.0], [3.0, 4.0]], None], ids=repr)
def test_an_x_that_is_not_a_tensor_is_rejected(x):
    assert_rejects(lambda: drill.can_view_without_copy(x, (4,)), WRONG_KIND, "x")
