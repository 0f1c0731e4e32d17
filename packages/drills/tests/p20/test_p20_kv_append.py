"""P20 append_kv_cache(k_cache, v_cache, k_new, v_new, positions): in-place slot writes.

The write checks are kv_cache's, shared through gptlab_testkit.slot_writes (one contract:
positions are row-local slots); the kit's two rejections and the step-by-step decode are
P20's own. The keyword `start` and the other rejections are extensions (test_p20_extension.py).
"""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from gptlab_testkit import assert_rejects, candidate, test_device
from gptlab_testkit import slot_writes as checks
from gptlab_testkit.boundary import BAD_VALUE, names_argument, names_value
from gptlab_testkit.oracles import assert_binds, inputs_untouched, seeded

drill = candidate("DRILL_P20_MODULE")

pytestmark = [pytest.mark.owner("p20"), pytest.mark.contract]


def long(rows: list[list[int]]) -> torch.Tensor:
    return torch.tensor(rows, dtype=torch.long, device=test_device())


def zeros(*shape: int) -> torch.Tensor:
    return torch.zeros(*shape, device=test_device())


@pytest.mark.clause("P20.1")
def test_the_signature_takes_the_five_tensors_positionally():
    k_cache, v_cache = zeros(1, 2, 4, 3), zeros(1, 2, 4, 3)
    k_new, v_new = seeded(1, 2, 1, 3, seed=24), seeded(1, 2, 1, 3, seed=25)

    assert_binds(drill.append_kv_cache, k_cache, v_cache, k_new, v_new, long([[1]]))
    drill.append_kv_cache(k_cache, v_cache, k_new, v_new, long([[1]]))

    assert torch.equal(k_cache[:, :, 1:2], k_new), "the keys were not written at slot 1"


@pytest.mark.clause("P20.3")
def test_only_the_selected_slots_of_each_row_change():
    checks.writes_exactly_the_chosen_slots(drill.append_kv_cache)


@pytest.mark.clause("P20.11")
def test_the_callers_caches_are_written_and_keep_their_data_pointers():
    checks.writes_in_place_without_reallocating(drill.append_kv_cache)


@pytest.mark.clause("P20.2", "P20.3")
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_any_distinct_positions_match_the_loop_oracle(data):
    checks.matches_loop_oracle_for_distinct_slots(drill.append_kv_cache, data)


@pytest.mark.clause("P20.5")
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


@pytest.mark.clause("P20.12")
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


def rejected(
    call: dict[str, object],
    argument: str | tuple[str, ...],
    errors: type[BaseException] | tuple[type[BaseException], ...] = BAD_VALUE,
    values: tuple[object, ...] = (),
) -> None:
    """The call raises `errors` naming `argument`, and no tensor changed first."""
    tensors = {name: value for name, value in call.items() if isinstance(value, torch.Tensor)}
    tensors = {name: value for name, value in tensors.items() if value.device.type != "meta"}
    positional = [call[name] for name in ("k_cache", "v_cache", "k_new", "v_new", "positions")]
    extra = {"start": call["start"]} if "start" in call else {}
    with inputs_untouched(**tensors):
        assert_rejects(
            lambda: drill.append_kv_cache(*positional, **extra), errors, argument, values=values
        )


# The bad position is row 1's last token: a write-then-check loop has already written.
@pytest.mark.clause("P20.6")
@pytest.mark.parametrize("bad", [5, 9, -1], ids=["at capacity", "past capacity", "negative"])
def test_a_position_outside_the_cache_is_rejected_before_any_write(bad):
    rejected(
        {**valid_call(), "positions": long([[0, 1, 2], [2, 3, bad]])}, "positions", values=(bad,)
    )


def written_once_per_slot(
    before: torch.Tensor, got: torch.Tensor, new: torch.Tensor, positions: torch.Tensor
) -> None:
    """Every slot written once holds the loop oracle's token; a slot written twice holds
    one of its tokens (either may win); every other slot keeps its value."""
    want = before.clone()
    for b, row in enumerate(positions.tolist()):
        for slot in set(row):
            tokens = [new[b, :, t] for t, p in enumerate(row) if p == slot]
            assert any(torch.equal(got[b, :, slot], token) for token in tokens), (
                f"row {b}'s slot {slot} holds none of the {len(tokens)} token(s) written to it"
            )
            want[b, :, slot] = got[b, :, slot]
    assert torch.equal(got, want), "a slot no position names changed"


# The kit allows either answer to a repeat: a rejection before any write, or a defined write.
@pytest.mark.rejection  # a refusal passes it: it earns beside the work only
@pytest.mark.clause("P20.7")
@pytest.mark.parametrize("row", [[2, 2, 4], [4, 3, 4]], ids=["adjacent repeat", "repeat apart"])
def test_a_position_repeated_within_a_row_is_rejected_or_written_once(row):
    call = {**valid_call(), "positions": long([[0, 1, 2], row])}
    before = {name: tensor.clone() for name, tensor in call.items()}
    repeat = next(p for p in row if row.count(p) > 1)
    try:
        drill.append_kv_cache(*call.values())
    except ValueError as error:
        message = str(error)
        assert names_argument(message, "positions") or names_value(message, repeat), (
            f"ValueError does not name positions or the repeated value: {message!r}"
        )
        for name, tensor in call.items():
            assert torch.equal(tensor, before[name]), f"{name} was written before the rejection"
        return
    except Exception as foreign:  # neither a rejection nor a write: a foreign error
        raise AssertionError(f"expected ValueError or a write, got {foreign!r}") from foreign
    for name in ("k_new", "v_new", "positions"):
        assert torch.equal(call[name], before[name]), f"{name} was written by the call"
    for cache, new in (("k_cache", "k_new"), ("v_cache", "v_new")):
        written_once_per_slot(before[cache], call[cache], call[new], call["positions"])


@pytest.mark.clause("P20.3")
def test_a_position_shared_by_two_rows_is_allowed():
    call = {**valid_call(), "positions": long([[0, 1, 2], [0, 1, 2]])}
    want_k = checks.loop_slot_write(call["k_cache"], call["k_new"], call["positions"])

    drill.append_kv_cache(*call.values())

    assert torch.equal(call["k_cache"], want_k), "rows do not own their own slots"


@pytest.mark.clause("P20.6")
@pytest.mark.parametrize("bad", [5, -1], ids=["at capacity", "negative"])
def test_a_one_token_write_outside_the_cache_in_row_one_is_rejected_before_any_write(bad):
    call = {**valid_call(), "k_new": seeded(2, 2, 1, 3, seed=14)}
    call = {**call, "v_new": seeded(2, 2, 1, 3, seed=15), "positions": long([[4], [bad]])}
    rejected(call, "positions", values=(bad,))


@pytest.mark.clause("P20.2")
def test_no_new_tokens_write_nothing():
    call = valid_call()
    empty = long([[], []]).reshape(2, 0)
    nothing = (call["k_new"][:, :, :0], call["v_new"][:, :, :0], empty)
    with inputs_untouched(**call):
        try:
            drill.append_kv_cache(call["k_cache"], call["v_cache"], *nothing)
        except (TypeError, ValueError) as error:  # T = 0 is valid: a rejection fails the clause
            raise AssertionError(f"a write of no tokens was rejected: {error}") from error


@pytest.mark.clause("P20.3", "P20.12")
def test_new_keys_may_be_an_expanded_view_and_a_batch_of_one_cache_may_have_stride_zero():
    # Only the caches are written: a broadcast k_new is fine, and so is a size-1 dim of stride 0.
    k_cache = torch.zeros(2 * 5 * 3, device=test_device()).as_strided((1, 2, 5, 3), (0, 15, 3, 1))
    v_cache = zeros(1, 2, 5, 3)
    k_new = seeded(1, 1, 1, 3, seed=22).expand(1, 2, 2, 3)
    v_new = seeded(1, 2, 2, 3, seed=23)
    positions = long([[4, 1]])
    want_k = checks.loop_slot_write(k_cache.clone(), k_new, positions)

    with inputs_untouched(k_new=k_new, v_new=v_new, positions=positions):
        drill.append_kv_cache(k_cache, v_cache, k_new, v_new, positions)

    assert torch.equal(k_cache, want_k), "keys from a broadcast k_new"
