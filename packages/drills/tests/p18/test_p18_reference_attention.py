"""P18 reference_attention(q, k, v, attn_mask=None, *, is_causal=False, scale=None) vs SDPA."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from gptlab_testkit import assert_close, assert_rejects, candidate
from gptlab_testkit.oracles import inputs_untouched, loop_attention, seeded

drill = candidate("DRILL_P18_MODULE")

pytestmark = [pytest.mark.owner("p18"), pytest.mark.contract]


def qkv(B, Hq, Hkv, L, S, D, seed):
    return (
        seeded(B, Hq, L, D, seed=seed),
        seeded(B, Hkv, S, D, seed=seed + 1),
        seeded(B, Hkv, S, D, seed=seed + 2),
    )


def some_allowed(*shape: int, seed: int) -> torch.Tensor:
    """A random boolean mask [..., L, S] where every query may attend key 0 at least."""
    allowed = seeded(*shape, seed=seed) > 0
    allowed[..., 0] = True
    return allowed


@pytest.mark.parametrize(("L", "S"), [(5, 5), (2, 6)])
def test_unmasked_attention_equals_sdpa(L, S):
    q, k, v = qkv(2, 3, 3, L, S, 8, seed=1)

    got = drill.reference_attention(q, k, v)

    assert got.shape == (2, 3, L, 8)
    assert_close(got, F.scaled_dot_product_attention(q, k, v), f"L={L}, S={S} vs SDPA")


def test_each_query_spreads_weights_summing_to_one_over_the_keys():
    # With every value equal to one, the output is the sum of a query's weights.
    q, k, _ = qkv(2, 2, 2, 3, 7, 4, seed=4)

    got = drill.reference_attention(q, k, torch.ones_like(k))

    assert_close(got, torch.ones(2, 2, 3, 4), "attention over all-one values")


def test_default_scale_is_one_over_sqrt_head_dim():
    q, k, v = qkv(1, 2, 2, 4, 4, 16, seed=7)

    got = drill.reference_attention(q, k, v)

    want = loop_attention(q, k, v, torch.ones(1, 1, 4, 4, dtype=torch.bool))
    assert_close(got.double(), want, "default scale vs 1/sqrt(16) loop oracle")


def test_an_explicit_scale_replaces_the_default():
    q, k, v = qkv(2, 2, 2, 3, 5, 8, seed=10)

    got = drill.reference_attention(q, k, v, scale=0.7)

    assert_close(got, F.scaled_dot_product_attention(q, k, v, scale=0.7), "scale=0.7 vs SDPA")


def test_causal_attention_equals_sdpa_is_causal():
    q, k, v = qkv(2, 2, 2, 6, 6, 4, seed=13)

    got = drill.reference_attention(q, k, v, is_causal=True)

    want = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    assert_close(got, want, "is_causal vs SDPA")


def test_a_boolean_mask_means_true_may_attend():
    q, k, v = qkv(2, 2, 2, 4, 6, 4, seed=16)
    allowed = some_allowed(2, 1, 4, 6, seed=19)

    got = drill.reference_attention(q, k, v, allowed)

    want = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed)
    assert_close(got, want, "boolean mask vs SDPA")


def test_a_float_mask_is_added_to_the_scores():
    q, k, v = qkv(2, 2, 2, 3, 5, 4, seed=20)
    bias = seeded(2, 1, 3, 5, seed=23) * 2

    got = drill.reference_attention(q, k, v, bias)

    want = F.scaled_dot_product_attention(q, k, v, attn_mask=bias)
    assert_close(got, want, "additive float mask vs SDPA")


def test_a_two_dimensional_mask_broadcasts_over_batch_and_heads():
    q, k, v = qkv(2, 2, 2, 4, 4, 4, seed=24)
    allowed = some_allowed(4, 4, seed=27)

    got = drill.reference_attention(q, k, v, allowed)

    assert_close(got.double(), loop_attention(q, k, v, allowed), "[L, S] mask vs loop oracle")


@pytest.mark.parametrize("group", [2, 4])
def test_grouped_query_heads_read_their_own_kv_head(group):
    q, k, v = qkv(2, 2 * group, 2, 3, 5, 4, seed=28)

    got = drill.reference_attention(q, k, v)

    repeated = (k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1))
    want = F.scaled_dot_product_attention(q, *repeated)
    assert_close(got, want, f"GQA group {group} vs repeat_interleave + SDPA")


@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_any_small_shape_and_mask_matches_the_loop_oracle(data):
    B = data.draw(st.integers(1, 2), label="B")
    Hkv = data.draw(st.integers(1, 2), label="Hkv")
    group = data.draw(st.sampled_from([1, 2, 3]), label="group")
    L = data.draw(st.integers(1, 4), label="L")
    S = data.draw(st.integers(1, 5), label="S")
    D = data.draw(st.integers(1, 4), label="D")
    seed = data.draw(st.integers(0, 2**16), label="seed")
    q, k, v = qkv(B, Hkv * group, Hkv, L, S, D, seed=seed)
    allowed = some_allowed(B, 1, L, S, seed=seed + 3)

    got = drill.reference_attention(q, k, v, allowed)

    assert got.shape == (B, Hkv * group, L, D)
    assert_close(got.double(), loop_attention(q, k, v, allowed), "attention vs loop oracle")


def test_two_calls_are_identical_and_draw_no_randomness():
    q, k, v = qkv(2, 2, 2, 5, 5, 4, seed=31)
    rng = torch.get_rng_state()

    first = drill.reference_attention(q, k, v, is_causal=True)
    second = drill.reference_attention(q, k, v, is_causal=True)

    assert torch.equal(first, second), "two equal calls differ (dropout?)"
    assert torch.equal(torch.get_rng_state(), rng), "the call drew from the global generator"


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_keeps_its_dtype_and_stays_close_to_fp32(dtype):
    q, k, v = qkv(2, 4, 2, 4, 6, 8, seed=34)
    allowed = some_allowed(2, 1, 4, 6, seed=37)
    want = drill.reference_attention(q, k, v, allowed)

    got = drill.reference_attention(q.to(dtype), k.to(dtype), v.to(dtype), allowed)

    assert got.dtype == dtype, f"{dtype} inputs returned {got.dtype}"
    assert_close(got.float(), want, f"{dtype} attention", atol=2e-2, rtol=2e-2)


def test_inputs_and_mask_are_not_written():
    q, k, v = qkv(2, 2, 1, 3, 4, 4, seed=38)
    allowed = some_allowed(2, 1, 3, 4, seed=41)

    with inputs_untouched(q=q, k=k, v=v, attn_mask=allowed):
        drill.reference_attention(q, k, v, allowed)


# ---- rejection: valid in every respect but one, before any work ----


def valid_call() -> dict[str, torch.Tensor]:
    q, k, v = qkv(2, 4, 2, 3, 5, 4, seed=42)
    return {"q": q, "k": k, "v": v}


def test_query_heads_not_a_multiple_of_kv_heads_are_rejected():
    call = {**valid_call(), "q": seeded(2, 3, 3, 4, seed=45)}
    with inputs_untouched(**call):
        assert_rejects(lambda: drill.reference_attention(**call), ValueError, ("q", "k"))


def test_keys_and_values_of_different_lengths_are_rejected():
    call = {**valid_call(), "v": seeded(2, 2, 4, 4, seed=46)}
    with inputs_untouched(**call):
        assert_rejects(lambda: drill.reference_attention(**call), ValueError, ("v", "k"))


def test_a_key_head_dim_unlike_the_querys_is_rejected():
    call = {**valid_call(), "k": seeded(2, 2, 5, 3, seed=47)}
    with inputs_untouched(**call):
        assert_rejects(lambda: drill.reference_attention(**call), ValueError, ("k", "q"))


def test_a_mask_that_does_not_broadcast_to_the_scores_is_rejected():
    call = valid_call()
    mask = torch.ones(2, 1, 3, 4, dtype=torch.bool)  # S is 5
    with inputs_untouched(**call, mask=mask):
        assert_rejects(
            lambda: drill.reference_attention(call["q"], call["k"], call["v"], mask),
            ValueError,
            ("attn_mask", "mask"),
        )
