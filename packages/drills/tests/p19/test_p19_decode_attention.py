"""P19 decode_attention(q, k_cache, v_cache, lengths): one query token over padded caches."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from gptlab_testkit import assert_close, candidate, shares_storage, test_device
from gptlab_testkit.oracles import (
    CONCATENATIONS,
    forbidding,
    inputs_untouched,
    loop_attention,
    seeded,
)

drill = candidate("DRILL_P19_MODULE")

pytestmark = [pytest.mark.owner("p19"), pytest.mark.contract]


def decode(*args: torch.Tensor) -> torch.Tensor:
    """The candidate's decode_attention; the kit's rule "no concatenation" holds on every call."""
    with forbidding(*CONCATENATIONS, what="decode_attention"):
        return drill.decode_attention(*args)


def padded(k: torch.Tensor, capacity: int, seed: int) -> torch.Tensor:
    """k [B, H, L, D] in a [B, H, capacity, D] cache whose slots past L hold large noise."""
    B, H, L, D = k.shape
    cache = seeded(B, H, capacity, D, seed=seed) * 1e3
    cache[:, :, :L] = k
    return cache


def valid_slots(lengths: torch.Tensor, capacity: int) -> torch.Tensor:
    """[B, 1, 1, S] bool: slot < length."""
    return (torch.arange(capacity, device=lengths.device) < lengths[:, None])[:, None, None, :]


def long(values: list[int]) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.long, device=test_device())


@pytest.mark.clause("P19.2", "P19.4")
def test_decode_equals_the_last_row_of_full_causal_attention():
    B, H, L, D, capacity = 2, 3, 5, 4, 8
    q, k, v = (seeded(B, H, L, D, seed=s) for s in (1, 2, 3))
    full = F.scaled_dot_product_attention(q, k, v, is_causal=True)

    got = decode(q[:, :, -1:], padded(k, capacity, 4), padded(v, capacity, 5), long([L, L]))

    assert got.shape == (B, H, 1, D)
    assert_close(got, full[:, :, -1:], "decode output vs last row of full attention")


@pytest.mark.clause("P19.5")
def test_slots_past_each_rows_length_never_participate():
    q = seeded(3, 2, 1, 4, seed=6)
    k, v = seeded(3, 2, 6, 4, seed=7), seeded(3, 2, 6, 4, seed=8)
    lengths = long([2, 6, 1])
    poisoned_k, poisoned_v = k.clone(), v.clone()
    for row, length in enumerate(lengths.tolist()):
        poisoned_k[row, :, length:] = 1e4
        poisoned_v[row, :, length:] = -1e4

    clean = decode(q, k, v, lengths)
    poisoned = decode(q, poisoned_k, poisoned_v, lengths)

    assert_close(poisoned, clean, "output after writing past each row's length")


@pytest.mark.clause("P19.4")
def test_mixed_lengths_match_a_loop_oracle_row_by_row():
    q = seeded(3, 2, 1, 4, seed=9)
    k, v = seeded(3, 2, 7, 4, seed=10), seeded(3, 2, 7, 4, seed=11)
    lengths = long([7, 3, 5])

    # the oracle first: the call's writes cannot reach it
    want = loop_attention(q, k, v, valid_slots(lengths, 7))
    got = decode(q, k, v, lengths)

    assert_close(got.double(), want, "mixed-length decode vs loop oracle")


@pytest.mark.clause("P19.6")
def test_grouped_query_heads_read_their_own_kv_head():
    # 4 query heads over 2 kv heads: heads 0, 1 read kv head 0; heads 2, 3 read kv head 1.
    q = seeded(1, 4, 1, 4, seed=12)
    k, v = seeded(1, 2, 5, 4, seed=13), seeded(1, 2, 5, 4, seed=14)
    lengths = long([4])

    # the oracle first: the call's writes cannot reach it
    repeated = (k.repeat_interleave(2, dim=1), v.repeat_interleave(2, dim=1))
    want = loop_attention(q, *repeated, valid_slots(lengths, 5))
    got = decode(q, k, v, lengths)

    assert_close(got.double(), want, "Hq > Hkv decode vs repeat_interleave oracle")


@pytest.mark.clause("P19.2", "P19.4", "P19.6")
@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_any_small_shape_matches_the_loop_oracle(data):
    B = data.draw(st.integers(1, 3), label="B")
    Hkv = data.draw(st.integers(1, 2), label="Hkv")
    group = data.draw(st.sampled_from([1, 2, 4]), label="Hq / Hkv")
    S = data.draw(st.integers(1, 6), label="S")
    D = data.draw(st.integers(1, 5), label="D")
    lengths = long([data.draw(st.integers(1, S), label=f"lengths[{b}]") for b in range(B)])
    seed = data.draw(st.integers(0, 2**16), label="seed")
    q = seeded(B, Hkv * group, 1, D, seed=seed)
    k, v = seeded(B, Hkv, S, D, seed=seed + 1), seeded(B, Hkv, S, D, seed=seed + 2)

    # the oracle first: the call's writes cannot reach it
    want = loop_attention(q, k, v, valid_slots(lengths, S))
    got = decode(q, k, v, lengths)

    assert got.shape == (B, Hkv * group, 1, D)
    assert_close(got.double(), want, "decode vs loop oracle")


@pytest.mark.clause("P19.4")
def test_batch_of_one_with_one_valid_slot_returns_that_slots_value():
    q, k, v = seeded(1, 2, 1, 3, seed=15), seeded(1, 2, 4, 3, seed=16), seeded(1, 2, 4, 3, seed=17)

    want = v[:, :, :1].clone()  # before the call: the call's writes cannot reach it
    got = decode(q, k, v, long([1]))

    assert_close(got, want, "attention over a single valid slot")


@pytest.mark.clause("P19.13", "P19.14")
def test_inputs_are_not_written_and_nothing_is_concatenated():
    q, k, v = seeded(2, 2, 1, 4, seed=18), seeded(2, 2, 5, 4, seed=19), seeded(2, 2, 5, 4, seed=20)
    lengths = long([3, 5])

    with inputs_untouched(q=q, k_cache=k, v_cache=v, lengths=lengths):
        decode(q, k, v, lengths)


@pytest.mark.clause("P19.3")
def test_half_precision_inputs_stay_close_to_fp32():
    q, k, v = seeded(2, 2, 1, 8, seed=21), seeded(2, 2, 6, 8, seed=22), seeded(2, 2, 6, 8, seed=23)
    lengths = long([6, 2])
    want = decode(q, k, v, lengths)

    for dtype in (torch.float16, torch.bfloat16):
        got = decode(q.to(dtype), k.to(dtype), v.to(dtype), lengths)
        assert got.dtype == dtype, f"{dtype} inputs returned {got.dtype}"
        assert_close(got.float(), want, f"{dtype} decode", atol=2e-2, rtol=2e-2)


# ---- rejection: valid in every respect but one, rejected before anything is written ----


def valid_call() -> dict[str, torch.Tensor]:
    return {
        "q": seeded(2, 4, 1, 4, seed=24),
        "k_cache": seeded(2, 2, 5, 4, seed=25),
        "v_cache": seeded(2, 2, 5, 4, seed=26),
        "lengths": long([5, 3]),
    }


@pytest.mark.clause("P19.5")
@pytest.mark.parametrize("poison", [float("nan"), float("inf"), -float("inf")], ids=repr)
def test_nan_or_inf_in_the_capacity_leaves_the_output_unchanged(poison):
    q = seeded(3, 4, 1, 4, seed=30)
    k, v = seeded(3, 2, 6, 4, seed=31), seeded(3, 2, 6, 4, seed=32)
    lengths = long([6, 2, 4])
    poisoned_k, poisoned_v = k.clone(), v.clone()
    poisoned_k[1:, :, 4:] = poison  # rows 1 and 2 keep their first 2 and 4 slots clean
    poisoned_k[1, :, 2:4] = poison
    poisoned_v[1:, :, 4:] = poison
    poisoned_v[1, :, 2:4] = poison

    got = decode(q, poisoned_k, poisoned_v, lengths)

    want = loop_attention(q, k, v, valid_slots(lengths, 6))
    assert_close(got.double(), want, f"decode with {poison} in the capacity vs loop oracle")


@pytest.mark.clause("P19.1")
def test_all_four_arguments_are_taken_positionally():
    call = valid_call()
    try:
        got = drill.decode_attention(call["q"], call["k_cache"], call["v_cache"], call["lengths"])
    except TypeError as error:  # a signature mismatch, not a rejected value
        raise AssertionError(f"decode_attention(q, k_cache, v_cache, lengths): {error}") from error
    want = loop_attention(
        call["q"],
        call["k_cache"].repeat_interleave(2, dim=1),
        call["v_cache"].repeat_interleave(2, dim=1),
        valid_slots(call["lengths"], 5),
    )
    assert_close(got.double(), want, "positional call vs loop oracle")


@pytest.mark.clause("P19.3")
def test_float32_inputs_give_a_float32_output():
    call = valid_call()
    assert drill.decode_attention(**call).dtype == torch.float32


@pytest.mark.clause("P19.13")
def test_the_output_is_new_memory_not_a_view_of_an_input():
    q, k, v = seeded(2, 2, 1, 4, seed=33), seeded(2, 2, 1, 4, seed=34), seeded(2, 2, 1, 4, seed=35)

    got = drill.decode_attention(q, k, v, long([1, 1]))

    # judged, the storages are the worker's, as it reported them (an advisory clause)
    for name, tensor in ("q", q), ("k", k), ("v", v):
        assert not shares_storage(got, tensor), f"the output lives in {name}'s memory"
