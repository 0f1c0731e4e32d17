"""PT07 extension: the reference's rejections, which the kit's list leaves open."""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import WRONG_KIND, assert_rejects, candidate, test_device

drill = candidate("DRILL_PT07_MODULE")

pytestmark = [pytest.mark.owner("pt07"), pytest.mark.extension]


@pytest.mark.clause("PT07.10")
@pytest.mark.parametrize(
    ("argument", "arguments"),
    [("head_dim", {"head_dim": 7}), ("head_dim", {"head_dim": 0}),
     ("head_dim", {"head_dim": 8.0}), ("base", {"head_dim": 8, "base": 1.0})],
    ids=["odd", "zero", "float", "base 1"],
)  # fmt: skip
def test_a_head_dim_or_base_that_makes_no_table_is_refused(argument, arguments):
    assert_rejects(lambda: drill.RotaryCache(**arguments), WRONG_KIND, argument)


@pytest.mark.clause("PT07.10")
@pytest.mark.parametrize(
    ("argument", "call"),
    [("seq_len", (torch.zeros(1), -1)), ("seq_len", (torch.zeros(1), 2.0)),
     ("like", ([0.0], 3)), ("like", (torch.zeros(1, dtype=torch.long), 3))],
    ids=["negative", "float", "list", "integer tensor"],
)  # fmt: skip
def test_a_request_for_no_valid_table_is_refused(argument, call):
    module = drill.RotaryCache(head_dim=8).to(test_device())
    assert_rejects(lambda: module(*call), WRONG_KIND, argument)
