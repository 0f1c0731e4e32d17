"""PT40 extension: this project's rules beyond the kit's contract (tested apart, never scored)."""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import BAD_VALUE, WRONG_KIND, assert_rejects, candidate, test_device
from gptlab_testkit.oracles import inputs_untouched

drill = candidate("DRILL_PT40_MODULE")

pytestmark = [pytest.mark.owner("pt40"), pytest.mark.extension]


def valid_call() -> dict[str, object]:
    top = torch.tensor([[0, 3], [2, 1]], device=test_device())
    return {"top_experts": top, "top_weights": torch.ones(2, 2, device=test_device()),
            "experts_per_rank": 2, "world_size": 2, "capacity": None}  # fmt: skip


@pytest.mark.clause("PT40.12")
@pytest.mark.parametrize(
    ("argument", "bad", "errors"),
    [
        ("top_experts", lambda: torch.tensor([[0, 4], [2, 1]]), BAD_VALUE),
        ("top_experts", lambda: torch.tensor([[0, -1], [2, 1]]), BAD_VALUE),
        ("top_experts", lambda: torch.tensor([[0.0, 3.0], [2.0, 1.0]]), WRONG_KIND),
        ("top_experts", lambda: torch.tensor([0, 3, 2, 1]), BAD_VALUE),
        ("top_weights", lambda: torch.ones(2, 3), BAD_VALUE),
        ("experts_per_rank", lambda: 0, BAD_VALUE),
        ("experts_per_rank", lambda: True, WRONG_KIND),
        ("world_size", lambda: 0, BAD_VALUE),
        ("capacity", lambda: -1, BAD_VALUE),
        ("capacity", lambda: 1.5, WRONG_KIND),
    ],
    ids=["an id past R * experts_per_rank", "a negative id", "float ids", "1-D ids",
         "weights of another shape", "experts_per_rank 0", "bool experts_per_rank",
         "world_size 0", "negative capacity", "float capacity"],
)  # fmt: skip
def test_the_reference_rejects_inputs_the_contract_leaves_undefined(argument, bad, errors):
    call = {**valid_call(), argument: bad()}
    kept = {n: t for n, t in call.items() if isinstance(t, torch.Tensor)}
    with inputs_untouched(**kept):
        assert_rejects(lambda: drill.build_expert_dispatch(**call), errors, argument)
