"""P05 extension: what this project's causal_length_mask does outside the graded contract."""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import assert_rejects, candidate

drill = candidate("DRILL_P05_MODULE")

pytestmark = [pytest.mark.owner("p05"), pytest.mark.extension]


@pytest.mark.clause("P05.13")
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=str)
def test_blocked_entries_hold_the_dtypes_own_minimum(dtype):
    mask = drill.causal_length_mask(torch.tensor([2]), 2, 3, dtype=dtype)

    assert mask[0, 0, 0, 2].item() == torch.finfo(dtype).min


@pytest.mark.clause("P05.13")
def test_meta_lengths_are_rejected_naming_lengths():
    lengths = torch.tensor([2, 3], device="meta")

    assert_rejects(lambda: drill.causal_length_mask(lengths, 3, 3), ValueError, "lengths")


@pytest.mark.clause("P05.13")
def test_an_empty_batch_gives_an_empty_mask():
    mask = drill.causal_length_mask(torch.zeros(0, dtype=torch.long), 2, 3)

    assert mask.shape == (0, 1, 2, 3)
