"""PT17 extension: this project's rules beyond the kit's contract (tested apart, never scored)."""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import BAD_VALUE, assert_rejects, candidate, test_device
from gptlab_testkit.oracles import inputs_untouched

drill = candidate("DRILL_PT17_MODULE")

pytestmark = [pytest.mark.owner("pt17"), pytest.mark.extension]


def long(rows: list[list[int]]) -> torch.Tensor:
    return torch.tensor(rows, dtype=torch.long, device=test_device())


def flags(rows: list[list[int]]) -> torch.Tensor:
    return torch.tensor(rows, dtype=torch.bool, device=test_device())


def valid_call() -> dict[str, torch.Tensor]:
    return {
        "query_positions": long([[3, 4], [3, 4]]),
        "key_positions": long([[0, 1, 2, 3, 4], [0, 1, 2, 3, 4]]),
        "key_valid": flags([[1, 1, 1, 1, 1], [0, 1, 1, 1, 1]]),
    }


@pytest.mark.clause("PT17.9")
def test_key_valid_shaped_unlike_key_positions_is_rejected():
    call = {**valid_call(), "key_valid": flags([[1, 1, 1, 1], [1, 1, 1, 1]])}
    with inputs_untouched(**call):
        assert_rejects(
            lambda: drill.position_causal_mask(**call), BAD_VALUE, ("key_valid", "key_positions")
        )


@pytest.mark.clause("PT17.10")
def test_query_and_key_batches_of_different_sizes_are_rejected():
    call = {**valid_call(), "query_positions": long([[3, 4], [3, 4], [3, 4]])}
    with inputs_untouched(**call):
        assert_rejects(
            lambda: drill.position_causal_mask(**call),
            BAD_VALUE,
            ("query_positions", "key_positions"),
        )
