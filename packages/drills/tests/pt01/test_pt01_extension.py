"""PT01 extension: this project's rules beyond the kit's contract (tested apart, never scored)."""

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

drill = candidate("DRILL_PT01_MODULE")

pytestmark = [pytest.mark.owner("pt01"), pytest.mark.extension]


def long(values: list[int]) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.long, device=test_device())


@pytest.mark.clause("PT01.12")
@pytest.mark.parametrize("starts", [[0, 2], [1, 1]], ids=["mixed starts", "equal starts"])
def test_the_result_is_new_memory_even_when_every_start_is_equal(starts):
    x = seeded(2, 5, 3, seed=1)
    before = x.clone()

    got = drill.gather_windows(x, long(starts), 3)

    # in judge mode the storages are the worker's, as it reported them
    assert not shares_storage(got, x), "the result is a view of x"
    with torch.inference_mode():
        got.fill_(7.0)
    assert torch.equal(x, before), "writing the result reached x"


def valid_call() -> dict[str, object]:
    return {"x": seeded(3, 6, 2, seed=2), "starts": long([0, 2, 1]), "width": 3}


@pytest.mark.clause("PT01.13")
@pytest.mark.parametrize(
    ("argument", "bad", "errors"),
    [
        ("starts", lambda: long([0, 2]), BAD_VALUE),
        ("starts", lambda: long([[0], [2], [1]]), BAD_VALUE),
        ("x", lambda: seeded(3, 6, seed=2), BAD_VALUE),
        ("width", lambda: -1, BAD_VALUE),
        ("width", lambda: True, WRONG_KIND),
        ("starts", lambda: [0, 2, 1], WRONG_KIND),
        ("x", lambda: [[0.0]], WRONG_KIND),
    ],
    ids=["short starts", "2-D starts", "2-D x", "negative width", "bool width",
         "a list of starts", "a list as x"],
)  # fmt: skip
def test_the_reference_rejects_inputs_the_contract_leaves_undefined(argument, bad, errors):
    call = {**valid_call(), argument: bad()}
    kept = {n: t for n, t in call.items() if isinstance(t, torch.Tensor)}
    with inputs_untouched(**kept):
        assert_rejects(lambda: drill.gather_windows(**call), errors, argument)
