"""P18 extension: is_causal with fewer queries than keys follows SDPA (top-left triangle)."""

from __future__ import annotations

import pytest
import torch.nn.functional as F

from gptlab_testkit import assert_close, candidate
from gptlab_testkit.oracles import seeded

drill = candidate("DRILL_P18_MODULE")

pytestmark = [pytest.mark.owner("p18"), pytest.mark.extension]


@pytest.mark.clause("P18.18")
def test_causal_with_fewer_queries_than_keys_is_sdpas_top_left_triangle():
    q, k, v = seeded(1, 2, 2, 4, seed=1), seeded(1, 2, 5, 4, seed=2), seeded(1, 2, 5, 4, seed=3)

    got = drill.reference_attention(q, k, v, is_causal=True)

    assert_close(got, F.scaled_dot_product_attention(q, k, v, is_causal=True), "L < S causal")
