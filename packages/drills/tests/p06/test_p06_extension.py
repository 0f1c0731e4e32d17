"""P06 extension: what this project's gather_last_token does outside the graded contract."""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import assert_rejects, candidate

drill = candidate("DRILL_P06_MODULE")

pytestmark = [pytest.mark.owner("p06"), pytest.mark.extension]


@pytest.mark.clause("P06.12")
@pytest.mark.parametrize("hidden_device", ["cpu", "meta"])
def test_meta_lengths_are_rejected_naming_lengths(hidden_device):
    hidden = torch.zeros(2, 3, 4, device=hidden_device)
    lengths = torch.tensor([3, 1], device="meta")

    assert_rejects(lambda: drill.gather_last_token(hidden, lengths), ValueError, "lengths")


@pytest.mark.clause("P06.12")
def test_integer_hidden_states_and_an_empty_batch_are_gathered():
    hidden = torch.arange(24).reshape(2, 3, 4)

    assert torch.equal(
        drill.gather_last_token(hidden, torch.tensor([1, 3])), hidden[[0, 1], [0, 2]]
    )
    empty = drill.gather_last_token(torch.zeros(0, 3, 4), torch.zeros(0, dtype=torch.long))
    assert empty.shape == (0, 4)
