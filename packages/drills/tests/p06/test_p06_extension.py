"""P06 extension: what this project's gather_last_token does outside the graded contract."""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import WRONG_KIND, assert_rejects, candidate, test_device
from gptlab_testkit.oracles import inputs_untouched, seeded

drill = candidate("DRILL_P06_MODULE")

pytestmark = [pytest.mark.owner("p06"), pytest.mark.extension]


def long(values: list[int], dtype=torch.long) -> torch.Tensor:
    return torch.tensor(values, dtype=dtype, device=test_device())


@pytest.mark.clause("P06.12")
@pytest.mark.parametrize("hidden_device", ["cpu", "meta"])
def test_meta_lengths_are_rejected_naming_lengths(hidden_device):
    hidden = torch.zeros(2, 3, 4, device=hidden_device)
    lengths = torch.tensor([3, 1], device="meta")

    assert_rejects(lambda: drill.gather_last_token(hidden, lengths), ValueError, "lengths")


@pytest.mark.clause("P06.12")
def test_integer_hidden_states_and_an_empty_batch_are_gathered():
    hidden = torch.arange(24).reshape(2, 3, 4)

    assert torch.equal(
        drill.gather_last_token(hidden, torch.tensor([1, 3])), hidden[[0, 1], [0, 2]]
    )
    empty = drill.gather_last_token(torch.zeros(0, 3, 4), torch.zeros(0, dtype=torch.long))
    assert empty.shape == (0, 4)


@pytest.mark.clause("P06.8")
def test_lengths_of_the_wrong_batch_size_are_rejected():
    hidden, lengths = seeded(3, 4, 2, seed=8), long([3, 2])
    with inputs_untouched(hidden=hidden, lengths=lengths):
        assert_rejects(
            lambda: drill.gather_last_token(hidden, lengths), ValueError, ("lengths", "hidden")
        )


@pytest.mark.clause("P06.9")
def test_hidden_that_is_not_three_dimensional_is_rejected():
    hidden, lengths = seeded(3, 4, seed=9), long([3, 2, 1])
    with inputs_untouched(hidden=hidden, lengths=lengths):
        assert_rejects(lambda: drill.gather_last_token(hidden, lengths), ValueError, "hidden")


@pytest.mark.clause("P06.8")
def test_two_dimensional_lengths_are_rejected():
    hidden, lengths = seeded(3, 4, 2, seed=11), long([[3], [2], [1]])
    with inputs_untouched(hidden=hidden, lengths=lengths):
        assert_rejects(
            lambda: drill.gather_last_token(hidden, lengths), ValueError, ("lengths", "hidden")
        )


@pytest.mark.clause("P06.9")
@pytest.mark.parametrize("hidden", [None, [[[1.0]]], "hidden"], ids=repr)
def test_hidden_that_is_not_a_tensor_is_rejected(hidden):
    assert_rejects(lambda: drill.gather_last_token(hidden, long([1])), WRONG_KIND, "hidden")


@pytest.mark.clause("P06.10")
@pytest.mark.parametrize("kind", ["float32", "bool", "list"])
def test_lengths_that_are_not_an_integer_tensor_are_rejected(kind):
    hidden, good = seeded(2, 3, 2, seed=12), long([3, 1])
    lengths = {"float32": good.float(), "bool": good.bool(), "list": [3, 1]}[kind]
    with inputs_untouched(hidden=hidden):
        assert_rejects(lambda: drill.gather_last_token(hidden, lengths), WRONG_KIND, "lengths")
