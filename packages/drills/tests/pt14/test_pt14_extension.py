"""PT14 extension: this project's rules beyond the kit's contract (tested apart, never scored)."""

from __future__ import annotations

import math

import pytest
import torch

from gptlab_testkit import BAD_VALUE, WRONG_KIND, assert_rejects, candidate, test_device
from gptlab_testkit.oracles import inputs_untouched, seeded

drill = candidate("DRILL_PT14_MODULE")

pytestmark = [pytest.mark.owner("pt14"), pytest.mark.extension]


def flags(values: list) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.bool, device=test_device())


@pytest.mark.clause("PT14.11")
def test_x_and_valid_are_only_read():
    x, valid = seeded(2, 3, seed=1), flags([[1, 0, 1], [0, 0, 0]])
    with inputs_untouched(x=x, valid=valid):
        drill.masked_logsumexp(x, valid, 1)


@pytest.mark.clause("PT14.12")
def test_several_plus_inf_entries_share_the_weight_equally():
    x = torch.tensor([[math.inf, 1.0, math.inf, math.inf]], device=test_device())
    lse, weights, _ = drill.masked_logsumexp(x, flags([[1, 1, 1, 0]]), 1)
    assert lse.item() == math.inf and weights.tolist() == [[0.5, 0.0, 0.5, 0.0]], f"{weights}"


def valid_call() -> dict[str, object]:
    return {"x": seeded(2, 3, seed=2), "valid": flags([[1, 0, 1], [1, 1, 0]]), "dim": 1}


@pytest.mark.clause("PT14.13")
@pytest.mark.parametrize(
    ("argument", "bad", "errors"),
    [
        ("valid", lambda: flags([[1, 0, 1]]), BAD_VALUE),
        ("valid", lambda: torch.ones(2, 3, device=test_device()), WRONG_KIND),
        ("dim", lambda: 2, BAD_VALUE),
        ("dim", lambda: -3, BAD_VALUE),
        ("dim", lambda: 1.0, WRONG_KIND),
        ("x", lambda: torch.ones(2, 3, dtype=torch.long, device=test_device()), WRONG_KIND),
        ("keepdim", lambda: 1, WRONG_KIND),
    ],
    ids=["short valid", "float valid", "dim past the end", "dim before the start", "float dim",
         "integer x", "an int keepdim"],
)  # fmt: skip
def test_the_reference_rejects_inputs_the_contract_leaves_undefined(argument, bad, errors):
    call = {**valid_call(), argument: bad()}
    kept = {n: t for n, t in call.items() if isinstance(t, torch.Tensor)}
    with inputs_untouched(**kept):
        assert_rejects(lambda: drill.masked_logsumexp(**call), errors, argument)
