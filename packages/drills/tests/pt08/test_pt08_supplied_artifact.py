"""PT08's extension tests: the supplied failing test fails on the start file and passes on the
reference; the tie also survives `load_state_dict(..., assign=True)` (beyond the contract)."""

from __future__ import annotations

import pytest
import torch

from gptlab_drills.catalogue import find
from gptlab_testkit import candidate
from gptlab_testkit.oracles import supplied_test_outcomes

pytestmark = [pytest.mark.owner("pt08"), pytest.mark.extension]


def test_the_supplied_test_fails_on_the_start_file_and_passes_on_the_reference():
    drill = find("PT08")
    start, test_file = drill.starting_artifact(), drill.failing_test()
    assert start is not None and start.is_file() and test_file is not None

    on_start = supplied_test_outcomes(test_file, drill.variable, str(start))
    on_reference = supplied_test_outcomes(test_file, drill.variable, drill.module)

    assert len(on_start) >= 4
    assert not any(on_start.values()), f"passes on the broken start file: {on_start}"
    assert all(on_reference.values()), f"fails on the reference: {on_reference}"


def test_the_tie_survives_a_load_that_assigns_new_tensors():
    drill = candidate("DRILL_PT08_MODULE")
    torch.manual_seed(0)
    source = drill.TiedLM(vocab_size=11, d_model=6, hidden=12)
    model = drill.TiedLM(vocab_size=11, d_model=6, hidden=12)

    model.load_state_dict(source.state_dict(), strict=True, assign=True)

    assert model.head.weight is model.embedding.weight
