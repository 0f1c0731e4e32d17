"""PT03 extension: this project's rules beyond the kit's contract (tested apart, never scored)."""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import (
    BAD_VALUE,
    WRONG_KIND,
    assert_rejects,
    candidate,
    shares_storage,
    test_device,
)
from gptlab_testkit.oracles import inputs_untouched, seeded

drill = candidate("DRILL_PT03_MODULE")

pytestmark = [pytest.mark.owner("pt03"), pytest.mark.extension]


def long(values: list[int]) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.long, device=test_device())


@pytest.mark.clause("PT03.9")
@pytest.mark.parametrize(
    ("argument", "bad", "errors"),
    [
        ("offsets", lambda: torch.tensor([0.0, 2.0, 5.0], device=test_device()), WRONG_KIND),
        ("offsets", lambda: long([[0, 2, 5]]), BAD_VALUE),
        ("offsets", lambda: long([]), BAD_VALUE),
        ("offsets", lambda: [0, 2, 5], WRONG_KIND),
        ("values", lambda: seeded(5, seed=1), BAD_VALUE),
    ],
    ids=["float offsets", "2-D offsets", "no offsets", "a list", "1-D values"],
)
def test_the_reference_rejects_inputs_the_contract_leaves_undefined(argument, bad, errors):
    call = {"values": seeded(5, 2, seed=1), "offsets": long([0, 2, 5]), argument: bad()}
    kept = {n: t for n, t in call.items() if isinstance(t, torch.Tensor)}
    with inputs_untouched(**kept):
        assert_rejects(lambda: drill.segment_sum_max(**call), errors, argument)


@pytest.mark.clause("PT03.10")
def test_inputs_are_only_read_and_the_results_are_new_memory():
    values, offsets = seeded(4, 2, seed=2), long([0, 4])
    with inputs_untouched(values=values, offsets=offsets):
        sums, maxes, valid = drill.segment_sum_max(values, offsets)
    # in judge mode the storages are the worker's, as it reported them
    for name, result in (("sums", sums), ("maxes", maxes), ("valid", valid)):
        assert not shares_storage(result, values), f"{name} is a view of values"
        assert not shares_storage(result, offsets), f"{name} is a view of offsets"
