"""PT15 extension: this project's rules beyond the kit's contract (tested apart, never scored)."""

from __future__ import annotations

import math

import pytest
import torch

from gptlab_testkit import BAD_VALUE, WRONG_KIND, assert_rejects, candidate, test_device
from gptlab_testkit.oracles import inputs_untouched, seeded

drill = candidate("DRILL_PT15_MODULE")

pytestmark = [pytest.mark.owner("pt15"), pytest.mark.extension]

NAMES = ("m_a", "l_a", "o_a", "m_b", "l_b", "o_b")


def parts() -> dict[str, torch.Tensor]:
    """Two parts of shape [2, 3] / [2, 3, 4]; part b of row (1, 2) is empty."""
    m_b = seeded(2, 3, seed=4)
    m_b[1, 2] = -math.inf
    l_b = seeded(2, 3, seed=5).abs() + 1
    l_b[1, 2] = 0.0
    o_b = seeded(2, 3, 4, seed=6)
    o_b[1, 2] = 0.0
    return {"m_a": seeded(2, 3, seed=1), "l_a": seeded(2, 3, seed=2).abs() + 1,
            "o_a": seeded(2, 3, 4, seed=3), "m_b": m_b, "l_b": l_b, "o_b": o_b}  # fmt: skip


@pytest.mark.clause("PT15.10")
def test_the_parts_are_only_read():
    call = parts()
    with inputs_untouched(**call):
        drill.merge_softmax_parts(**call)


@pytest.mark.clause("PT15.11")
@pytest.mark.parametrize(
    ("argument", "bad", "errors"),
    [
        ("l_b", lambda: seeded(2, 4, seed=7), BAD_VALUE),
        ("o_b", lambda: seeded(2, 3, 5, seed=7), BAD_VALUE),
        ("o_a", lambda: seeded(2, 3, seed=7), BAD_VALUE),
        ("m_a", lambda: torch.zeros(2, 3, dtype=torch.long, device=test_device()), WRONG_KIND),
        ("l_a", lambda: [[1.0] * 3] * 2, WRONG_KIND),
    ],
    ids=["l_b of another shape", "o_b of another D", "o_a without D", "integer m_a", "a list"],
)
def test_the_reference_rejects_inputs_the_contract_leaves_undefined(argument, bad, errors):
    call = {**parts(), argument: bad()}
    kept = {n: t for n, t in call.items() if isinstance(t, torch.Tensor)}
    with inputs_untouched(**kept):
        assert_rejects(lambda: drill.merge_softmax_parts(**call), errors, argument)
