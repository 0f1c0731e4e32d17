"""PT02 extension: this project's rules beyond the kit's contract (tested apart, never scored)."""

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

drill = candidate("DRILL_PT02_MODULE")

pytestmark = [pytest.mark.owner("pt02"), pytest.mark.extension]


def long(values: list[int]) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.long, device=test_device())


@pytest.mark.clause("PT02.10")
@pytest.mark.parametrize(
    ("argument", "bad", "errors"),
    [
        ("lengths", lambda: long([1, 2]), BAD_VALUE),
        ("lengths", lambda: long([[1], [2], [0]]), BAD_VALUE),
        ("lengths", lambda: torch.tensor([1.0, 2.0, 0.0], device=test_device()), WRONG_KIND),
        ("lengths", lambda: [1, 2, 0], WRONG_KIND),
        ("x", lambda: seeded(3, 4, seed=1), BAD_VALUE),
    ],
    ids=["short lengths", "2-D lengths", "float lengths", "a list of lengths", "2-D x"],
)
def test_pack_rejects_inputs_the_contract_leaves_undefined(argument, bad, errors):
    call = {"x": seeded(3, 4, 2, seed=1), "lengths": long([1, 2, 0]), argument: bad()}
    kept = {n: t for n, t in call.items() if isinstance(t, torch.Tensor)}
    with inputs_untouched(**kept):
        assert_rejects(lambda: drill.pack_valid(**call), errors, argument)


def restore_call() -> dict[str, object]:
    return {
        "flat": seeded(3, 2, seed=2),
        "row_ids": long([0, 1, 1]),
        "col_ids": long([0, 0, 2]),
        "batch": 2,
        "time": 3,
        "fill": 0.0,
    }


@pytest.mark.clause("PT02.11")
@pytest.mark.parametrize(
    ("argument", "bad", "errors"),
    [
        ("row_ids", lambda: long([0, 2, 1]), BAD_VALUE),
        ("col_ids", lambda: long([0, 0, 3]), BAD_VALUE),
        ("col_ids", lambda: long([0, -1, 2]), BAD_VALUE),
        ("row_ids", lambda: long([0, 1]), BAD_VALUE),
        ("col_ids", lambda: long([0, 0, 0]), BAD_VALUE),
        ("row_ids", lambda: torch.tensor([0.0, 1.0, 1.0], device=test_device()), WRONG_KIND),
        ("batch", lambda: -1, BAD_VALUE),
        ("time", lambda: 3.0, WRONG_KIND),
        ("flat", lambda: seeded(3, seed=2), BAD_VALUE),
    ],
    ids=["row past batch", "col past time", "negative col", "short row_ids",
         "a repeated coordinate", "float row_ids", "negative batch", "float time", "1-D flat"],
)  # fmt: skip
def test_restore_rejects_inputs_the_contract_leaves_undefined(argument, bad, errors):
    call = {**restore_call(), argument: bad()}
    kept = {n: t for n, t in call.items() if isinstance(t, torch.Tensor)}
    names = ("row_ids", "col_ids") if argument in ("row_ids", "col_ids") else argument
    with inputs_untouched(**kept):
        assert_rejects(lambda: drill.restore_valid(**call), errors, names)


@pytest.mark.clause("PT02.12")
def test_inputs_are_only_read_and_every_result_is_new_memory():
    x, lengths = seeded(2, 3, 2, seed=3), long([3, 3])
    with inputs_untouched(x=x, lengths=lengths):
        flat, row_ids, col_ids = drill.pack_valid(x, lengths)
    # in judge mode the storages are the worker's, as it reported them
    assert not shares_storage(flat, x), "flat is a view of x"
    with inputs_untouched(flat=flat, row_ids=row_ids, col_ids=col_ids):
        restored = drill.restore_valid(flat, row_ids, col_ids, 2, 3, 0.0)
    assert not shares_storage(restored, flat), "the restored batch is a view of flat"
