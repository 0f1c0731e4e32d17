"""P07 extension: what this project's masked_logits does outside the graded contract."""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import assert_rejects, candidate

drill = candidate("DRILL_P07_MODULE")

pytestmark = [pytest.mark.owner("p07"), pytest.mark.extension]


@pytest.mark.clause("P07.11")
def test_zero_dimensional_logits_are_rejected_naming_logits():
    logits = torch.tensor(1.0)

    assert_rejects(lambda: drill.masked_logits(logits, torch.tensor(True)), ValueError, "logits")


@pytest.mark.clause("P07.11")
@pytest.mark.parametrize("logits_device", ["cpu", "meta"])
def test_a_meta_mask_is_rejected_naming_allowed(logits_device):
    logits = torch.zeros(2, 3, device=logits_device)
    allowed = torch.ones(2, 3, dtype=torch.bool, device="meta")

    assert_rejects(lambda: drill.masked_logits(logits, allowed), ValueError, "allowed")
