"""PT21 extension: this project's rules beyond the kit's contract (tested apart, never scored)."""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import BAD_VALUE, WRONG_KIND, assert_rejects, candidate, test_device
from gptlab_testkit.oracles import inputs_untouched, seeded

drill = candidate("DRILL_PT21_MODULE")

pytestmark = [pytest.mark.owner("pt21"), pytest.mark.extension]


def long(values: list[int]) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.long, device=test_device())


def valid_call() -> dict[str, object]:
    return {
        "cache": seeded(2, 4, 2, 3, seed=1),
        "values": seeded(3, 2, 3, seed=2),
        "slot_mapping": long([0, 5, 3]),
    }


@pytest.mark.clause("PT21.10")
@pytest.mark.parametrize(
    ("argument", "bad", "errors"),
    [
        ("values", lambda: seeded(2, 2, 3, seed=3), BAD_VALUE),
        ("values", lambda: seeded(3, 1, 3, seed=3), BAD_VALUE),
        ("values", lambda: seeded(3, 2, 3, seed=3, dtype=torch.float64), WRONG_KIND),
        ("slot_mapping", lambda: long([[0, 5, 3]]), BAD_VALUE),
        ("slot_mapping", lambda: long([0, 5, 3]).float(), WRONG_KIND),
        ("slot_mapping", lambda: long([0, 1, 1]).bool(), WRONG_KIND),
        ("cache", lambda: seeded(8, 2, 3, seed=4), BAD_VALUE),
        ("values", lambda: [[0.0]], WRONG_KIND),
    ],
    ids=["N differs", "Hkv differs", "f64 values", "2-D slots", "float slots", "bool slots",
         "3-D cache", "a list as values"],
)  # fmt: skip
def test_inputs_the_contract_leaves_undefined_are_rejected(argument, bad, errors):
    call = {**valid_call(), argument: bad()}
    kept = {n: t for n, t in call.items() if isinstance(t, torch.Tensor)}
    with inputs_untouched(**kept):
        assert_rejects(lambda: drill.write_slots_(**call), errors, argument)
