"""P20 append_kv_cache(k_cache, v_cache, k_new, v_new, positions): in-place slot writes.

The write checks are kv_cache's, shared through gptlab_testkit.slot_writes (one contract:
positions are row-local slots); the rejections and the step-by-step decode are P20's own.
"""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from gptlab_testkit import assert_rejects, candidate, test_device
from gptlab_testkit import slot_writes as checks
from gptlab_testkit.oracles import inputs_untouched, seeded

drill = candidate("DRILL_P20_MODULE")

pytestmark = [pytest.mark.owner("p20"), pytest.mark.contract]


def long(rows: list[list[int]]) -> torch.Tensor:
    return torch.tensor(rows, dtype=torch.long, device=test_device())


def zeros(*shape: int) -> torch.Tensor:
    return torch.zeros(*shape, device=test_device())


def test_only_the_selected_slots_of_each_row_change():
    checks.writes_exactly_the_chosen_slots(drill.append_kv_cache)


def test_the_callers_caches_are_written_and_keep_their_data_pointers():
    checks.writes_in_place_without_reallocating(drill.append_kv_cache)


@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_any_distinct_positions_match_the_loop_oracle(data):
    checks.matches_loop_oracle_for_distinct_slots(drill.append_kv_cache, data)


def test_one_token_steps_build_the_same_cache_as_one_prefill_write():
    B, H, S, D, T = 2, 2, 6, 3, 4
    k_new, v_new = seeded(B, H, T, D, seed=1), seeded(B, H, T, D, seed=2)
    prefill_k, prefill_v = zeros(B, H, S, D), zeros(B, H, S, D)
    drill.append_kv_cache(prefill_k, prefill_v, k_new, v_new, long([[0, 1, 2, 3]] * B))

    step_k, step_v = zeros(B, H, S, D), zeros(B, H, S, D)
    for t in range(T):
        drill.append_kv_cache(
            step_k, step_v, k_new[:, :, t : t + 1], v_new[:, :, t : t + 1], long([[t]] * B)
        )

    assert torch.equal(step_k, prefill_k), "keys: decode steps differ from one prefill write"
    assert torch.equal(step_v, prefill_v), "values: decode steps differ from one prefill write"


def test_the_new_keys_values_and_positions_are_only_read():
    k_cache, v_cache = seeded(2, 2, 5, 3, seed=3), seeded(2, 2, 5, 3, seed=4)
    k_new, v_new = seeded(2, 2, 2, 3, seed=5), seeded(2, 2, 2, 3, seed=6)
    positions = long([[3, 0], [1, 4]])

    with inputs_untouched(k_new=k_new, v_new=v_new, positions=positions):
        drill.append_kv_cache(k_cache, v_cache, k_new, v_new, positions)


# ---- rejection: valid in every respect but one, rejected before anything is written ----


def valid_call() -> dict[str, torch.Tensor]:
    return {
        "k_cache": seeded(2, 2, 5, 3, seed=7),
        "v_cache": seeded(2, 2, 5, 3, seed=8),
        "k_new": seeded(2, 2, 3, 3, seed=9),
        "v_new": seeded(2, 2, 3, 3, seed=10),
        "positions": long([[0, 1, 2], [2, 3, 4]]),
    }


def rejected(call: dict[str, torch.Tensor], argument: str | tuple[str, ...]) -> None:
    """The call raises ValueError naming `argument`, and no tensor changed first."""
    with inputs_untouched(**call):
        assert_rejects(lambda: drill.append_kv_cache(*call.values()), ValueError, argument)


# The bad position is row 1's last token: a write-then-check loop has already written.
@pytest.mark.parametrize("bad", [5, 9, -1], ids=["at capacity", "past capacity", "negative"])
def test_a_position_outside_the_cache_is_rejected_before_any_write(bad):
    rejected({**valid_call(), "positions": long([[0, 1, 2], [2, 3, bad]])}, "positions")


@pytest.mark.parametrize("row", [[2, 2, 4], [4, 3, 4]], ids=["adjacent repeat", "repeat apart"])
def test_a_position_repeated_within_a_row_is_rejected(row):
    rejected({**valid_call(), "positions": long([[0, 1, 2], row])}, "positions")


def test_a_position_shared_by_two_rows_is_allowed():
    call = {**valid_call(), "positions": long([[0, 1, 2], [0, 1, 2]])}
    want_k = checks.loop_slot_write(call["k_cache"], call["k_new"], call["positions"])

    drill.append_kv_cache(*call.values())

    assert torch.equal(call["k_cache"], want_k), "rows do not own their own slots"


def test_new_keys_with_a_token_count_other_than_the_positions_are_rejected():
    rejected({**valid_call(), "k_new": seeded(2, 2, 2, 3, seed=11)}, ("k_new", "positions"))


def test_caches_of_different_shapes_are_rejected():
    rejected({**valid_call(), "v_cache": seeded(2, 2, 4, 3, seed=12)}, ("v_cache", "k_cache"))


def test_positions_for_another_batch_size_are_rejected():
    rejected({**valid_call(), "positions": long([[0, 1, 2]])}, "positions")


def test_new_values_of_another_dtype_are_rejected():
    rejected({**valid_call(), "v_new": seeded(2, 2, 3, 3, seed=13, dtype=torch.float64)}, "v_new")
