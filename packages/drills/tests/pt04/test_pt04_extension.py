"""PT04 extension: this project's rules beyond the kit's contract (tested apart, never scored)."""

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

drill = candidate("DRILL_PT04_MODULE")

pytestmark = [pytest.mark.owner("pt04"), pytest.mark.extension]


def long(rows: list[list[int]]) -> torch.Tensor:
    return torch.tensor(rows, dtype=torch.long, device=test_device())


@pytest.mark.clause("PT04.10")
@pytest.mark.parametrize(
    ("argument", "bad", "errors"),
    [
        ("indices", lambda: torch.tensor([[0.0, 1.0]] * 3, device=test_device()), WRONG_KIND),
        ("indices", lambda: torch.tensor([[True, False]] * 3, device=test_device()), WRONG_KIND),
        ("indices", lambda: long([0, 1, 2]), BAD_VALUE),
        ("indices", lambda: [[0, 1]] * 3, WRONG_KIND),
        ("x", lambda: seeded(3, seed=1), BAD_VALUE),
    ],
    ids=["float indices", "bool indices", "1-D indices", "a list", "1-D x"],
)
def test_the_reference_rejects_inputs_the_contract_leaves_undefined(argument, bad, errors):
    call = {"x": seeded(3, 4, 2, seed=1), "indices": long([[0, 1], [2, 3], [1, 1]])}
    call[argument] = bad()
    kept = {n: t for n, t in call.items() if isinstance(t, torch.Tensor)}
    with inputs_untouched(**kept):
        assert_rejects(lambda: drill.batched_index_select(**call), errors, argument)


@pytest.mark.clause("PT04.11")
def test_inputs_are_only_read_and_the_result_is_new_memory():
    x, indices = seeded(2, 4, 3, seed=2), long([[0, 1, 2, 3], [3, 2, 1, 0]])
    with inputs_untouched(x=x, indices=indices):
        got = drill.batched_index_select(x, indices)
    # in judge mode the storages are the worker's, as it reported them
    assert not shares_storage(got, x), "the result is a view of x"
