"""PT32 extension: this project's rules beyond the kit's contract (tested apart, never scored)."""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import candidate
from gptlab_testkit.oracles import seeded

drill = candidate("DRILL_PT32_MODULE")

pytestmark = [pytest.mark.owner("pt32"), pytest.mark.extension]


@pytest.mark.clause("PT32.11")
@pytest.mark.parametrize("B", [1, 8])
def test_the_program_runs_a_batch_of_one_and_of_eight(saved_program, B):
    program = saved_program(drill.export_processor(4))
    logits = seeded(B, 4, seed=B)
    temperature = torch.full((B,), 0.5)
    allowed = torch.ones(B, 4, dtype=torch.bool)

    got = program.run(logits, temperature, allowed)

    assert torch.allclose(got, torch.softmax(logits / 0.5, dim=-1), atol=1e-6)
