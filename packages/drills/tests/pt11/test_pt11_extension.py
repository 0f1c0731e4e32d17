"""PT11 extension: shapes and kinds the kit's list leaves open."""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import WRONG_KIND, assert_rejects, candidate, test_device

drill = candidate("DRILL_PT11_MODULE")

pytestmark = [pytest.mark.owner("pt11"), pytest.mark.extension]


@pytest.mark.clause("PT11.11")
@pytest.mark.parametrize(
    "x",
    [lambda: torch.tensor(1.0), lambda: torch.zeros(3, 0), lambda: [[1.0, 2.0]],
     lambda: torch.zeros(2, 2, dtype=torch.float64)],
    ids=["0-d", "D = 0", "a list", "float64"],
)  # fmt: skip
def test_an_x_without_rows_of_fp16_bf16_or_fp32_values_is_refused(x):
    value = x()
    if isinstance(value, torch.Tensor):
        value = value.to(test_device())
    assert_rejects(lambda: drill.quantize_per_token(value), WRONG_KIND, "x")
