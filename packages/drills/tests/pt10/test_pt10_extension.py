"""PT10 extension: arguments the kit's list leaves open (rank, world size, axis, kinds)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from gptlab_testkit import WRONG_KIND, assert_rejects, candidate, test_device
from gptlab_testkit.oracles import inputs_untouched, seeded

drill = candidate("DRILL_PT10_MODULE")

pytestmark = [pytest.mark.owner("pt10"), pytest.mark.extension]


def valid_call() -> dict:
    target = nn.Parameter(torch.zeros(4, 6, device=test_device()))
    return {"target": target, "source": seeded(8, 6, seed=1), "axis": 0, "rank": 1,
            "world_size": 2}  # fmt: skip


@pytest.mark.clause("PT10.12")
@pytest.mark.parametrize(
    ("argument", "bad"),
    [("rank", 2), ("rank", -1), ("world_size", 0), ("axis", 2), ("axis", -3), ("rank", 1.0),
     ("world_size", True), ("source", [[1.0] * 6] * 8)],
    ids=["rank = world", "negative rank", "world 0", "axis 2", "axis -3", "float rank",
         "bool world", "list source"],
)  # fmt: skip
def test_an_argument_outside_its_range_or_kind_is_refused(argument, bad):
    call = {**valid_call(), argument: bad}
    tensors = {k: v for k, v in call.items() if isinstance(v, torch.Tensor)}
    with inputs_untouched(**tensors):
        assert_rejects(lambda: drill.load_linear_shard_(**call), WRONG_KIND, argument)
