"""P20 extension: this project's rules beyond the kit's contract (tested apart, never scored)."""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import assert_rejects, candidate, test_device
from gptlab_testkit import slot_writes as checks
from gptlab_testkit.boundary import BAD_VALUE, WRONG_KIND
from gptlab_testkit.oracles import inputs_untouched, seeded

drill = candidate("DRILL_P20_MODULE")

pytestmark = [pytest.mark.owner("p20"), pytest.mark.extension]


def long(rows: list[list[int]]) -> torch.Tensor:
    return torch.tensor(rows, dtype=torch.long, device=test_device())


def zeros(*shape: int) -> torch.Tensor:
    return torch.zeros(*shape, device=test_device())


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


def started(starts: list[int]) -> torch.Tensor:
    return torch.tensor(starts, dtype=torch.long, device=test_device())


def valid_call() -> dict[str, torch.Tensor]:
    return {
        "k_cache": seeded(2, 2, 5, 3, seed=7),
        "v_cache": seeded(2, 2, 5, 3, seed=8),
        "k_new": seeded(2, 2, 3, 3, seed=9),
        "v_new": seeded(2, 2, 3, 3, seed=10),
        "positions": long([[0, 1, 2], [2, 3, 4]]),
    }


def accepted(*tensors: torch.Tensor) -> None:
    """append_kv_cache(k_cache, v_cache, k_new, v_new, positions, start=...) on a valid call:
    a rejection here is a failed contract, not a foreign error."""
    *five, start = tensors
    try:
        drill.append_kv_cache(*five, start=start)
    except (TypeError, ValueError) as error:
        raise AssertionError(
            f"a valid call was rejected: {type(error).__name__}: {error}"
        ) from error


@pytest.mark.clause("P20.8")
def test_new_keys_with_a_token_count_other_than_the_positions_are_rejected():
    rejected({**valid_call(), "k_new": seeded(2, 2, 2, 3, seed=11)}, ("k_new", "positions"))


@pytest.mark.clause("P20.8")
def test_caches_of_different_shapes_are_rejected():
    rejected({**valid_call(), "v_cache": seeded(2, 2, 4, 3, seed=12)}, ("v_cache", "k_cache"))


@pytest.mark.clause("P20.8")
def test_positions_for_another_batch_size_are_rejected():
    rejected({**valid_call(), "positions": long([[0, 1, 2]])}, "positions")


@pytest.mark.clause("P20.9")
def test_new_values_of_another_dtype_are_rejected():
    call = {**valid_call(), "v_new": seeded(2, 2, 3, 3, seed=13, dtype=torch.float64)}
    rejected(call, "v_new", WRONG_KIND)


@pytest.mark.clause("P20.4")
@pytest.mark.parametrize("bad", [[0, 4], [0, -3]], ids=["slot past capacity", "slot below 0"])
def test_a_position_outside_the_cache_after_its_start_is_rejected(bad):
    # Row 1's start 4 makes its positions 4..8 slots 0..4; position 2 would be slot -2.
    call = {**valid_call(), "positions": long([[0, 1, 2], [4, 5, 4 + 5 if bad[1] == 4 else 2]])}
    rejected({**call, "start": started([0, 4])}, ("positions", "start"), values=(9, 2, -2))


@pytest.mark.clause("P20.4")
def test_a_slot_repeated_after_the_start_is_rejected():
    call = {**valid_call(), "positions": long([[0, 1, 2], [6, 7, 6]])}
    rejected({**call, "start": started([0, 3])}, "positions")


@pytest.mark.clause("P20.8")
def test_a_start_of_another_batch_size_is_rejected():
    rejected({**valid_call(), "start": started([0, 0, 0])}, "start")


@pytest.mark.clause("P20.9")
@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("positions", long([0, 1, 2])),
        ("k_new", seeded(2, 2, 3 * 3, seed=21)),
        ("positions", long([[0, 1, 2], [2, 3, 4]]).float()),
        ("positions", long([[0, 1, 0], [0, 1, 1]]).bool()),
        ("start", torch.tensor([0.0, 0.0])),
        ("k_new", [[0.0]]),
        ("v_cache", seeded(2, 2, 5, 3, seed=16, dtype=torch.float64)),
        ("k_cache", torch.empty(2, 2, 5, 3, device="meta")),
    ],
    ids=[
        "1-D positions",
        "3-D k_new",
        "float positions",
        "bool positions",
        "float start",
        "list k_new",
        "f64 v_cache",
        "meta",
    ],
)
def test_the_wrong_kind_or_dtype_of_tensor_is_rejected(name, value):
    rejected({**valid_call(), name: value}, name, WRONG_KIND)


@pytest.mark.clause("P20.10")
@pytest.mark.parametrize(
    "how", ["expanded slots", "expanded batch", "requires grad", "inference tensor"]
)
def test_a_value_cache_that_cannot_be_written_in_place_is_rejected_before_the_keys(how):
    call = valid_call()
    if how == "expanded slots":
        call["v_cache"] = seeded(2, 2, 1, 3, seed=17).expand(2, 2, 5, 3)
    elif how == "expanded batch":
        call["v_cache"] = seeded(1, 2, 5, 3, seed=17).expand(2, 2, 5, 3)
    elif how == "requires grad":
        call["v_cache"] = call["v_cache"].requires_grad_()
    else:
        with torch.inference_mode():
            call["v_cache"] = seeded(2, 2, 5, 3, seed=18)
    rejected(call, "v_cache", BAD_VALUE)


@pytest.mark.clause("P20.9")
def test_a_call_of_meta_tensors_only_is_rejected():
    call = {name: torch.empty_like(value, device="meta") for name, value in valid_call().items()}
    rejected(call, tuple(call), WRONG_KIND)


@pytest.mark.clause("P20.4")
def test_decode_steps_from_a_start_fill_the_slots_from_zero():
    B, H, S, D, T = 2, 2, 6, 3, 4
    k_new, v_new = seeded(B, H, T, D, seed=19), seeded(B, H, T, D, seed=20)
    prefill_k, prefill_v = zeros(B, H, S, D), zeros(B, H, S, D)
    drill.append_kv_cache(prefill_k, prefill_v, k_new, v_new, long([[0, 1, 2, 3]] * B))

    step_k, step_v = zeros(B, H, S, D), zeros(B, H, S, D)
    start = started([7, 2])
    for t in range(T):
        new = (k_new[:, :, t : t + 1], v_new[:, :, t : t + 1])
        accepted(step_k, step_v, *new, (start + t)[:, None], start)

    assert torch.equal(step_k, prefill_k), "keys: steps from a start miss slots 0..T-1"
    assert torch.equal(step_v, prefill_v), "values: steps from a start miss slots 0..T-1"


@pytest.mark.clause("P20.4")
def test_a_start_offset_moves_each_rows_positions_to_their_slots():
    call = valid_call()
    start = started([10, 3])  # row 0 holds positions 10..14, row 1 holds 3..7
    positions = long([[12, 10, 14], [3, 7, 5]])
    want_k = checks.loop_slot_write(call["k_cache"], call["k_new"], positions - start[:, None])
    want_v = checks.loop_slot_write(call["v_cache"], call["v_new"], positions - start[:, None])

    with inputs_untouched(start=start, positions=positions):
        accepted(call["k_cache"], call["v_cache"], call["k_new"], call["v_new"], positions, start)

    assert torch.equal(call["k_cache"], want_k), "keys: slot != position - start"
    assert torch.equal(call["v_cache"], want_v), "values: slot != position - start"


@pytest.mark.clause("P20.4")
def test_start_defaults_to_zero():
    call, again = valid_call(), valid_call()
    try:
        drill.append_kv_cache(*call.values())
        drill.append_kv_cache(*again.values(), start=started([0, 0]))
    except TypeError as error:  # a signature mismatch, not a rejected value
        raise AssertionError(f"append_kv_cache(..., positions, start=...): {error}") from error

    assert torch.equal(call["k_cache"], again["k_cache"]), "start=None is not start=0"
    assert torch.equal(call["v_cache"], again["v_cache"]), "start=None is not start=0"


@pytest.mark.clause("P20.14")
@pytest.mark.parametrize("row", [[2, 2, 4], [4, 3, 4]], ids=["adjacent repeat", "repeat apart"])
def test_a_position_repeated_within_a_row_is_rejected(row):
    rejected({**valid_call(), "positions": long([[0, 1, 2], row])}, "positions")
