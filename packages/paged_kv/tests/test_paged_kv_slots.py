"""Block tables and the slot formula: where each absolute position's K/V live."""

from __future__ import annotations

import pytest
import torch

pytestmark = [pytest.mark.owner("paged_slots"), pytest.mark.contract]


def expected_slot(table: tuple[int, ...], start: int, position: int, block_size: int) -> int:
    offset = position - start
    return table[offset // block_size] * block_size + offset % block_size


def test_slot_mapping_follows_the_formula_from_a_nonzero_start(pool):
    start = 6
    pool.admit("a", [1], start=start)
    pool.append({"a": list(range(1, 11))})
    table = pool.cache.block_table("a")

    positions = list(range(start, start + 10))
    slots = pool.cache.slot_mapping("a", positions)

    assert slots.tolist() == [expected_slot(table, start, p, 4) for p in positions]


def test_appended_kv_lands_in_its_block_and_offset(pool):
    start = 3
    pool.admit("other", [9])
    pool.append({"other": [9, 9]})  # another request's block first, so tables differ
    pool.admit("a", [1], start=start)
    pool.append({"a": [1, 2, 3, 4, 5, 6]})

    want = pool.kv_of("a", [1, 2, 3, 4, 5, 6])
    table = pool.cache.block_table("a")
    for layer, (key, value) in enumerate(pool.cache.storage):
        for index in range(6):  # offset from the request's start, not from zero
            block, offset = table[index // 4], index % 4
            torch.testing.assert_close(key[block, :, offset].cpu(), want[layer, 0, :, index])
            torch.testing.assert_close(value[block, :, offset].cpu(), want[layer, 1, :, index])


def test_model_inputs_return_rows_of_other_starts_and_lengths_in_position_order(pool):
    pool.admit("a", [1], start=5)
    pool.admit("b", [1], start=0)
    pool.append({"a": [1, 2, 3], "b": [4, 5, 6]})
    pool.append({"b": [7, 8, 9, 10, 11]})

    pool.assert_stored("b", "a")
    _, lengths, starts = pool.cache.model_inputs(["a", "b"])
    assert lengths.tolist() == [3, 8]
    assert starts.tolist() == [5, 0]


def test_model_inputs_of_empty_rows_are_none(pool):
    pool.admit("a", [1, 2])

    assert pool.cache.model_inputs(["a"]) == (None, None, None)


def test_model_inputs_are_new_tensors(pool):
    pool.admit("a", [1], start=2)
    pool.append({"a": [1, 2, 3, 4, 5]})
    past, _, _ = pool.cache.model_inputs(["a"])

    with torch.inference_mode():
        for key, value in past:
            key.fill_(7.0)
            value.fill_(7.0)

    pool.assert_stored("a")
