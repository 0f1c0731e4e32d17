"""PT20 extension: this project's rules beyond the kit's contract (tested apart, never scored)."""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import BAD_VALUE, WRONG_KIND, assert_rejects, candidate, test_device
from gptlab_testkit.oracles import inputs_untouched, seeded

drill = candidate("DRILL_PT20_MODULE")

pytestmark = [pytest.mark.owner("pt20"), pytest.mark.extension]


def long(values) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.long, device=test_device())


def valid_call() -> dict[str, object]:
    return {
        "q": seeded(5, 4, 3, seed=1),
        "k": seeded(5, 2, 3, seed=2),
        "v": seeded(5, 2, 3, seed=3),
        "cu_seqlens": long([0, 2, 2, 5]),
    }


@pytest.mark.clause("PT20.10")
@pytest.mark.parametrize(
    "bad", [[1, 2, 5], [0, 2, 4], [0, 2, 6], [0, 3, 2, 5], []],
    ids=["first not 0", "last short of N", "last past N", "a decrease", "empty"],
)  # fmt: skip
def test_malformed_offsets_are_rejected(bad):
    call = {**valid_call(), "cu_seqlens": long(bad)}
    with inputs_untouched(**{n: t for n, t in call.items() if isinstance(t, torch.Tensor)}):
        assert_rejects(lambda: drill.varlen_attention(**call), BAD_VALUE, "cu_seqlens")


@pytest.mark.clause("PT20.11")
@pytest.mark.parametrize(
    ("argument", "bad", "errors", "named"),
    [
        ("k", lambda: seeded(5, 3, 3, seed=4), BAD_VALUE, ("q", "k")),
        ("v", lambda: seeded(4, 2, 3, seed=5), BAD_VALUE, ("k", "v")),
        ("k", lambda: seeded(5, 2, 2, seed=6), BAD_VALUE, ("q", "k")),
        ("q", lambda: seeded(5, 12, seed=7), BAD_VALUE, ("q",)),
        ("cu_seqlens", lambda: long([0, 2, 2, 5]).float(), WRONG_KIND, ("cu_seqlens",)),
        ("scale", lambda: float("nan"), BAD_VALUE, ("scale",)),
        ("scale", lambda: True, WRONG_KIND, ("scale",)),
        ("q", lambda: [[0.0]], WRONG_KIND, ("q",)),
    ],
    ids=["Hq not a multiple of Hkv", "v of another N", "k of another D", "2-D q",
         "float offsets", "NaN scale", "bool scale", "a list as q"],
)  # fmt: skip
def test_inputs_the_contract_leaves_undefined_are_rejected(argument, bad, errors, named):
    call = {**valid_call(), argument: bad()}
    with inputs_untouched(**{n: t for n, t in call.items() if isinstance(t, torch.Tensor)}):
        assert_rejects(lambda: drill.varlen_attention(**call), errors, named)
