"""P01 extension: what this project's stride_report does outside the graded contract."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from gptlab_testkit import WRONG_KIND, assert_rejects, candidate

drill = candidate("DRILL_P01_MODULE")

pytestmark = [pytest.mark.owner("p01"), pytest.mark.extension]


def type_name(value: object) -> str:
    return type(value).__name__


@pytest.mark.clause("P01.10")
@pytest.mark.parametrize("layout", ["coo", "csr"])
def test_a_sparse_tensor_is_rejected_naming_x(layout):
    dense = torch.eye(3)
    x = dense.to_sparse() if layout == "coo" else dense.to_sparse_csr()

    assert_rejects(lambda: drill.stride_report(x), ValueError, "x")


@pytest.mark.clause("P01.10")
def test_a_meta_tensor_is_reported_as_torch_sees_it():
    x = torch.empty(3, 4, device="meta").t()

    report = drill.stride_report(x)

    assert report["stride"] == (1, 4) and report["data_ptr"] == 0


@pytest.mark.clause("P01.8")
@pytest.mark.parametrize(
    "x", [[[1.0, 2.0]], None, 3.0, np.zeros((2, 2)), torch.Size([2, 2])], ids=type_name
)
def test_something_that_is_not_a_tensor_is_rejected(x):
    assert_rejects(lambda: drill.stride_report(x), WRONG_KIND, "x")
