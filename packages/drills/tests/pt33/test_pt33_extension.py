"""PT33 extension: this project's rules beyond the kit's contract (tested apart, never scored)."""

from __future__ import annotations

import pytest

from gptlab_testkit import BAD_VALUE, assert_rejects, candidate
from gptlab_testkit.oracles import seeded

drill = candidate("DRILL_PT33_MODULE")

pytestmark = [pytest.mark.owner("pt33"), pytest.mark.extension]


@pytest.mark.clause("PT33.10")
@pytest.mark.parametrize("device", ["cpu", "meta"], ids=["real", "fake"])
@pytest.mark.parametrize("eps", [0.0, -1e-5], ids=["zero", "negative"])
def test_a_nonpositive_eps_is_rejected_real_and_fake(device, eps):
    x, weight = seeded(3, 8, seed=1).to(device), seeded(8, seed=2).to(device)
    assert_rejects(
        lambda: drill.rms_norm(x, weight, eps), (BAD_VALUE, RuntimeError), "eps", values=[eps]
    )
