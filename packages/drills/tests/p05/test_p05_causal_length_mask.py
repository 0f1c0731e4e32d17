"""P05 causal_length_mask(lengths, query_length, key_length, dtype): additive [B, 1, L, S]."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from gptlab_testkit import (
    assert_close,
    assert_rejects,
    candidate,
    shares_storage,
    test_device,
)
from gptlab_testkit.oracles import assert_binds, inputs_untouched, loop_attention, seeded

drill = candidate("DRILL_P05_MODULE")

pytestmark = [pytest.mark.owner("p05"), pytest.mark.contract]

HEADS = 3  # the mask must broadcast over any head count


def long(values: list[int]) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.long, device=test_device())


def allowed_loop(lengths: list[int], L: int, S: int) -> torch.Tensor:
    """[B, L, S] bool, one entry at a time: query i sits at slot S - L + i."""
    allowed = torch.zeros(len(lengths), L, S, dtype=torch.bool)
    for b, length in enumerate(lengths):
        for i in range(L):
            for j in range(S):
                allowed[b, i, j] = j <= S - L + i and j < length
    return allowed.to(test_device())


def mask_for(lengths: list[int], L: int, S: int, dtype=torch.float32) -> torch.Tensor:
    mask = drill.causal_length_mask(long(lengths), L, S, dtype=dtype)
    assert mask.dtype == dtype, f"mask dtype {mask.dtype}, asked for {dtype}"
    B = len(lengths)
    try:
        return torch.broadcast_to(mask, (B, HEADS, L, S))
    except RuntimeError as error:
        shape = tuple(mask.shape)
        raise AssertionError(f"mask {shape} does not broadcast to [B, H, L, S]") from error


def assert_mask_means(mask: torch.Tensor, allowed: torch.Tensor, what: str) -> None:
    """Allowed entries add exactly 0; blocked ones get exactly zero softmax weight."""
    allowed = allowed[:, None].expand_as(mask)
    assert bool((mask[allowed] == 0).all()), f"{what}: an allowed entry is not 0"
    scores = (seeded(*mask.shape, seed=99) * 3).to(mask.dtype)
    weights = (scores + mask).float().softmax(dim=-1)
    assert bool(torch.isfinite(weights).all()), f"{what}: softmax of scores + mask is not finite"
    assert bool((weights[~allowed] == 0).all()), f"{what}: a blocked key kept softmax weight"


@pytest.mark.clause("P05.3", "P05.5", "P05.6")
def test_square_prefill_with_full_rows_is_the_causal_triangle():
    got = mask_for([4, 4], 4, 4)

    assert_mask_means(got, allowed_loop([4, 4], 4, 4), "square prefill")


@pytest.mark.clause("P05.5", "P05.6")
def test_square_prefill_with_unequal_lengths_hides_each_rows_padding():
    lengths = [5, 2, 4]

    got = mask_for(lengths, 5, 5)

    assert_mask_means(got, allowed_loop(lengths, 5, 5), "prefill with right padding")


@pytest.mark.clause("P05.5", "P05.6")
def test_one_token_decode_sees_every_valid_slot_of_its_row():
    lengths = [6, 3, 1]

    got = mask_for(lengths, 1, 6)

    assert_mask_means(got, allowed_loop(lengths, 1, 6), "decode L=1, S=6")


@pytest.mark.clause("P05.5", "P05.6")
def test_a_chunk_of_queries_sits_at_the_last_slots():
    # 3 queries over 7 slots: query 0 sits at slot 4 and sees slots 0..4.
    lengths = [7, 6]

    got = mask_for(lengths, 3, 7)

    assert_mask_means(got, allowed_loop(lengths, 3, 7), "chunk L=3, S=7")


@pytest.mark.clause("P05.3", "P05.5", "P05.6")
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_any_small_batch_matches_the_loop_oracle(data):
    B = data.draw(st.integers(1, 4), label="B")
    S = data.draw(st.integers(1, 7), label="S")
    L = data.draw(st.integers(1, S), label="L")
    lengths = [data.draw(st.integers(1, S), label=f"lengths[{b}]") for b in range(B)]

    got = mask_for(lengths, L, S)

    assert_mask_means(got, allowed_loop(lengths, L, S), f"B={B}, L={L}, S={S}")


@pytest.mark.clause("P05.4", "P05.6")
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_the_mask_has_the_requested_dtype_and_keeps_softmax_finite(dtype):
    lengths = [5, 3]

    got = mask_for(lengths, 2, 5, dtype=dtype)

    assert_mask_means(got, allowed_loop(lengths, 2, 5), f"{dtype} mask")


@pytest.mark.clause("P05.5", "P05.6")
def test_attention_under_the_mask_equals_attention_over_allowed_keys_only():
    lengths, L, S = [6, 4], 2, 6
    q = seeded(2, HEADS, L, 4, seed=1)
    k, v = seeded(2, HEADS, S, 4, seed=2), seeded(2, HEADS, S, 4, seed=3)
    mask = drill.causal_length_mask(long(lengths), L, S, dtype=torch.float32)

    got = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)

    want = loop_attention(q, k, v, allowed_loop(lengths, L, S)[:, None])
    assert_close(got.double(), want, "SDPA under the mask vs loop oracle")


@pytest.mark.clause("P05.12")
def test_lengths_are_not_written():
    lengths = long([3, 5])
    with inputs_untouched(lengths=lengths):
        drill.causal_length_mask(lengths, 5, 5, dtype=torch.float32)


# ---- rejection: valid in every respect but one, before any work ----


@pytest.mark.clause("P05.7")
def test_a_row_with_zero_valid_keys_is_rejected():
    lengths = long([4, 0])
    with inputs_untouched(lengths=lengths):
        assert_rejects(
            lambda: drill.causal_length_mask(lengths, 2, 4, dtype=torch.float32),
            ValueError,
            "lengths",
            values=[0],
        )


@pytest.mark.clause("P05.1")
def test_the_first_three_are_positional_and_dtype_a_keyword():
    lengths = long([3, 2])

    assert_binds(drill.causal_length_mask, lengths, 2, 3, dtype=torch.float16)
    assert_binds(drill.causal_length_mask, lengths, 2)
    assert_mask_means(mask_for([3, 2], 2, 3, dtype=torch.float16), allowed_loop([3, 2], 2, 3), "")


def default_key_length_mask(lengths: list[int], L: int) -> torch.Tensor:
    mask = drill.causal_length_mask(long(lengths), L, dtype=torch.float32)
    assert tuple(mask.shape[-2:]) == (L, L), f"default key_length: mask {tuple(mask.shape)}"
    return torch.broadcast_to(mask, (len(lengths), HEADS, L, L))


@pytest.mark.clause("P05.2")
def test_without_key_length_the_mask_is_a_square_prefill():
    lengths = [4, 2, 3]

    got = default_key_length_mask(lengths, 4)

    assert_mask_means(got, allowed_loop(lengths, 4, 4), "key_length defaulted")


@pytest.mark.clause("P05.2")
def test_without_key_length_a_one_token_call_sees_its_one_slot():
    got = default_key_length_mask([1, 1], 1)

    assert_mask_means(got, allowed_loop([1, 1], 1, 1), "L=1, key_length defaulted")


@pytest.mark.clause("P05.4")
def test_without_dtype_the_mask_is_float32_on_the_lengths_device():
    lengths = long([2, 3])

    mask = drill.causal_length_mask(lengths, 1, 3)

    assert mask.dtype == torch.float32, f"default dtype {mask.dtype}"
    assert mask.device == lengths.device, f"mask on {mask.device}, lengths on {lengths.device}"


@pytest.mark.clause("P05.4", "P05.5")
def test_int32_lengths_give_the_same_mask():
    lengths = torch.tensor([4, 1, 3], dtype=torch.int32, device=test_device())

    mask = drill.causal_length_mask(lengths, 2, 4, dtype=torch.bfloat16)

    assert mask.dtype == torch.bfloat16 and mask.device == lengths.device
    got = torch.broadcast_to(mask, (3, HEADS, 2, 4))
    assert_mask_means(got, allowed_loop([4, 1, 3], 2, 4), "int32 lengths")


@pytest.mark.clause("P05.12")
def test_the_mask_is_a_new_tensor_that_does_not_alias_lengths():
    lengths = long([2, 2])

    first = drill.causal_length_mask(lengths, 2, 2, dtype=torch.float32)
    second = drill.causal_length_mask(lengths, 2, 2, dtype=torch.float32)

    # in judge mode the storages are the worker's, as it reported them
    assert not shares_storage(first, lengths), "the mask is a view of lengths"
    assert not shares_storage(first, second), "two calls return one cached mask"
    first.fill_(1.0)  # the caller owns the mask: writing one leaves the next call alone
    assert bool((second[:, :, 1, :] == 0).all()), "two calls share one mask"
