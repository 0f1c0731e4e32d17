"""P05 extension: what this project's causal_length_mask does outside the graded contract."""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import (
    WRONG_KIND,
    assert_rejects,
    candidate,
    test_device,
)
from gptlab_testkit.oracles import inputs_untouched

drill = candidate("DRILL_P05_MODULE")

pytestmark = [pytest.mark.owner("p05"), pytest.mark.extension]


def long(values: list[int]) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.long, device=test_device())


@pytest.mark.clause("P05.13")
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=str)
def test_blocked_entries_hold_the_dtypes_own_minimum(dtype):
    mask = drill.causal_length_mask(torch.tensor([2]), 2, 3, dtype=dtype)

    assert mask[0, 0, 0, 2].item() == torch.finfo(dtype).min


@pytest.mark.clause("P05.13")
def test_meta_lengths_are_rejected_naming_lengths():
    lengths = torch.tensor([2, 3], device="meta")

    assert_rejects(lambda: drill.causal_length_mask(lengths, 3, 3), ValueError, "lengths")


@pytest.mark.clause("P05.13")
def test_an_empty_batch_gives_an_empty_mask():
    mask = drill.causal_length_mask(torch.zeros(0, dtype=torch.long), 2, 3)

    assert mask.shape == (0, 1, 2, 3)


@pytest.mark.clause("P05.8")
def test_more_queries_than_keys_are_rejected():
    lengths = long([3, 2])
    with inputs_untouched(lengths=lengths):
        assert_rejects(
            lambda: drill.causal_length_mask(lengths, 4, 3, dtype=torch.float32),
            ValueError,
            ("query_length", "key_length"),
        )


@pytest.mark.clause("P05.10")
def test_lengths_that_are_not_one_dimensional_are_rejected():
    lengths = long([3, 2]).reshape(2, 1)
    with inputs_untouched(lengths=lengths):
        assert_rejects(
            lambda: drill.causal_length_mask(lengths, 3, 3, dtype=torch.float32),
            ValueError,
            "lengths",
        )


@pytest.mark.clause("P05.9")
@pytest.mark.parametrize(
    ("argument", "sizes"),
    [
        ("query_length", (0, 3)),
        ("query_length", (-1, 3)),
        ("query_length", (True, 3)),
        ("query_length", (2.0, 3)),
        ("query_length", (None, 3)),
        ("key_length", (2, 3.0)),
        ("key_length", (2, "3")),
    ],
    ids=repr,
)
def test_a_size_that_is_not_a_positive_int_is_rejected(argument, sizes):
    lengths = long([3, 2])
    with inputs_untouched(lengths=lengths):
        assert_rejects(
            lambda: drill.causal_length_mask(lengths, *sizes, dtype=torch.float32),
            WRONG_KIND,
            argument,
        )


@pytest.mark.clause("P05.9")
@pytest.mark.parametrize("key_length", [0, -2])
def test_a_key_length_below_one_is_a_value_error(key_length):
    lengths = long([1, 1])

    assert_rejects(
        lambda: drill.causal_length_mask(lengths, 1, key_length, dtype=torch.float32),
        ValueError,
        ("key_length", "query_length"),
    )


@pytest.mark.clause("P05.10")
@pytest.mark.parametrize("kind", ["float32", "bool", "list"])
def test_lengths_that_are_not_an_integer_tensor_are_rejected(kind):
    good = long([3, 1])
    lengths = {"float32": good.float(), "bool": good.bool(), "list": [3, 1]}[kind]

    assert_rejects(
        lambda: drill.causal_length_mask(lengths, 3, 3, dtype=torch.float32),
        WRONG_KIND,
        "lengths",
    )


@pytest.mark.clause("P05.11")
@pytest.mark.parametrize("dtype", [torch.int64, torch.bool, "float32"], ids=str)
def test_a_dtype_that_is_not_floating_is_rejected(dtype):
    lengths = long([3, 2])
    with inputs_untouched(lengths=lengths):
        assert_rejects(
            lambda: drill.causal_length_mask(lengths, 2, 3, dtype=dtype), WRONG_KIND, "dtype"
        )


@pytest.mark.clause("P05.14")
def test_a_length_past_key_length_is_rejected():
    lengths = long([4, 5])
    with inputs_untouched(lengths=lengths):
        assert_rejects(
            lambda: drill.causal_length_mask(lengths, 2, 4, dtype=torch.float32),
            ValueError,
            "lengths",
            values=[5],
        )
