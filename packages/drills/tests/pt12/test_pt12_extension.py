"""PT12 extension: inputs the kit's list leaves open."""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import WRONG_KIND, assert_rejects, candidate, test_device
from gptlab_testkit.oracles import seeded

drill = candidate("DRILL_PT12_MODULE")

pytestmark = [pytest.mark.owner("pt12"), pytest.mark.extension]


def valid() -> dict:
    return {"x": seeded(2, 7, seed=1), "weight": seeded(5, 7, seed=2), "eps": 1e-6}


@pytest.mark.clause("PT12.10")
@pytest.mark.parametrize(
    ("argument", "bad"),
    [("weight", lambda: seeded(5, 6, seed=3)), ("weight", lambda: seeded(7, seed=3)),
     ("x", lambda: seeded(2, 0, seed=3)), ("x", lambda: torch.ones(2, 7, dtype=torch.long)),
     ("weight", lambda: seeded(5, 7, seed=3, dtype=torch.float16)),
     ("weight", lambda: torch.empty(5, 7, device="meta")),
     ("eps", lambda: True), ("eps", lambda: "1e-6")],
    ids=["weight H", "weight 1-D", "H = 0", "int x", "weight dtype", "weight device",
         "bool eps", "str eps"],
)  # fmt: skip
def test_inputs_the_kit_leaves_open_are_refused(argument, bad):
    call = {**valid(), argument: bad()}
    if argument == "x" and call["x"].device.type != "meta":
        call["x"] = call["x"].to(test_device())
    assert_rejects(lambda: drill.normalize_project(**call), WRONG_KIND, (argument, "x", "weight"))
