"""PT34 extension: this project's rules beyond the kit's contract (tested apart, never scored)."""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import BAD_VALUE, candidate
from gptlab_testkit.oracles import inputs_untouched, seeded

drill = candidate("DRILL_PT34_MODULE")

pytestmark = [pytest.mark.owner("pt34"), pytest.mark.extension]


@pytest.mark.clause("PT34.10")
@pytest.mark.parametrize("operator", ["cache_write_", "cache_written"])
@pytest.mark.parametrize("slot", [5, -1], ids=["past the end", "negative"])
def test_a_slot_outside_the_cache_is_rejected_before_any_write(operator, slot):
    cache, value = seeded(5, 4, seed=1), seeded(2, 4, seed=2)
    index = torch.tensor([1, slot])
    with (
        inputs_untouched(cache=cache, index=index, value=value),
        pytest.raises((BAD_VALUE, RuntimeError, IndexError)),
    ):
        getattr(drill, operator)(cache, index, value)
