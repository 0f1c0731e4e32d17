"""PT08's extension test: the tie also survives `load_state_dict(..., assign=True)` (beyond
the contract). The supplied artifact's own test: test_drills_catalogue.py."""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import candidate

pytestmark = [pytest.mark.owner("pt08"), pytest.mark.extension]


@pytest.mark.clause("PT08.10")
def test_the_tie_survives_a_load_that_assigns_new_tensors():
    drill = candidate("DRILL_PT08_MODULE")
    torch.manual_seed(0)
    source = drill.TiedLM(vocab_size=11, d_model=6, hidden=12)
    model = drill.TiedLM(vocab_size=11, d_model=6, hidden=12)

    model.load_state_dict(source.state_dict(), strict=True, assign=True)

    assert model.head.weight is model.embedding.weight
