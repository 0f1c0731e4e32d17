"""PT31 extension: this project's rules beyond the kit's contract (tested apart, never scored)."""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import candidate, test_device
from gptlab_testkit.oracles import seeded

drill = candidate("DRILL_PT31_MODULE")

pytestmark = [pytest.mark.owner("pt31"), pytest.mark.extension]


class History:
    def __init__(self) -> None:
        self.appended: list[torch.Tensor] = []

    def append(self, item: torch.Tensor) -> None:
        self.appended.append(item)

    def __len__(self) -> int:
        return len(self.appended)


@pytest.mark.clause("PT31.11")
def test_a_later_step_does_not_rewrite_an_earlier_steps_tokens():
    history = History()
    lengths = torch.tensor([2, 3], device=test_device())
    finished, scores = torch.tensor([False, False], device=test_device()), seeded(2, seed=1)
    first = None
    for step in range(3):
        tokens, finished, scores, _ = drill.decode_step(
            seeded(2, 3, 6, seed=step), lengths, finished, scores, 2, history
        )
        if first is None:
            first = tokens.clone()
    assert torch.equal(history.appended[0].cpu(), first.cpu()), "step 0's tokens were rewritten"
