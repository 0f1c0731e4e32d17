"""P18 reference_attention(q, k, v, attn_mask=None, *, is_causal=False, scale=None) vs SDPA."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from gptlab_testkit import assert_close, candidate, shares_storage
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


@pytest.mark.clause("P18.4", "P18.2")
@pytest.mark.parametrize(("L", "S"), [(5, 5), (2, 6)])
def test_unmasked_attention_equals_sdpa(L, S):
    q, k, v = qkv(2, 3, 3, L, S, 8, seed=1)

    # the oracle first: the call's writes cannot reach it
    want = F.scaled_dot_product_attention(q, k, v)
    got = drill.reference_attention(q, k, v)

    assert got.shape == (2, 3, L, 8)
    assert_close(got, want, f"L={L}, S={S} vs SDPA")


@pytest.mark.clause("P18.4")
def test_each_query_spreads_weights_summing_to_one_over_the_keys():
    # With every value equal to one, the output is the sum of a query's weights.
    q, k, _ = qkv(2, 2, 2, 3, 7, 4, seed=4)

    got = drill.reference_attention(q, k, torch.ones_like(k))

    assert_close(got, torch.ones(2, 2, 3, 4), "attention over all-one values")


@pytest.mark.clause("P18.4")
def test_default_scale_is_one_over_sqrt_head_dim():
    q, k, v = qkv(1, 2, 2, 4, 4, 16, seed=7)

    # the oracle first: the call's writes cannot reach it
    want = loop_attention(q, k, v, torch.ones(1, 1, 4, 4, dtype=torch.bool))
    got = drill.reference_attention(q, k, v)

    assert_close(got.double(), want, "default scale vs 1/sqrt(16) loop oracle")


@pytest.mark.clause("P18.5")
def test_an_explicit_scale_replaces_the_default():
    q, k, v = qkv(2, 2, 2, 3, 5, 8, seed=10)

    # the oracle first: the call's writes cannot reach it
    want = F.scaled_dot_product_attention(q, k, v, scale=0.7)
    got = drill.reference_attention(q, k, v, scale=0.7)

    assert_close(got, want, "scale=0.7 vs SDPA")


@pytest.mark.clause("P18.5")
def test_an_explicit_scale_with_a_mask_matches_the_loop_oracle():
    # softmax(q k^T * s) = softmax((q * s * sqrt(D)) k^T / sqrt(D)): the oracle's default scale.
    q, k, v = qkv(2, 4, 2, 3, 5, 4, seed=11)
    allowed = some_allowed(2, 1, 3, 5, seed=12)

    # the oracle first: the call's writes cannot reach it
    want = loop_attention(q * 1.9 * 2.0, k, v, allowed)
    got = drill.reference_attention(q, k, v, allowed, scale=1.9)

    assert_close(got.double(), want, "scale=1.9 with a mask vs loop oracle")


@pytest.mark.clause("P18.6")
def test_causal_attention_equals_sdpa_is_causal():
    q, k, v = qkv(2, 2, 2, 6, 6, 4, seed=13)

    # the oracle first: the call's writes cannot reach it
    want = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    got = drill.reference_attention(q, k, v, is_causal=True)

    assert_close(got, want, "is_causal vs SDPA")


@pytest.mark.clause("P18.6")
def test_causal_grouped_attention_matches_the_loop_oracle():
    q, k, v = qkv(2, 4, 2, 5, 5, 4, seed=14)
    causal = torch.ones(5, 5, dtype=torch.bool).tril()

    # the oracle first: the call's writes cannot reach it
    want = loop_attention(q, k, v, causal)
    got = drill.reference_attention(q, k, v, is_causal=True)

    assert_close(got.double(), want, "is_causal vs loop oracle")


@pytest.mark.clause("P18.7")
def test_a_boolean_mask_means_true_may_attend():
    q, k, v = qkv(2, 2, 2, 4, 6, 4, seed=16)
    allowed = some_allowed(2, 1, 4, 6, seed=19)

    # the oracle first: the call's writes cannot reach it
    want = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed)
    got = drill.reference_attention(q, k, v, allowed)

    assert_close(got, want, "boolean mask vs SDPA")


@pytest.mark.clause("P18.7")
def test_a_float_mask_is_added_to_the_scores():
    q, k, v = qkv(2, 2, 2, 3, 5, 4, seed=20)
    bias = seeded(2, 1, 3, 5, seed=23) * 2

    # the oracle first: the call's writes cannot reach it
    want = F.scaled_dot_product_attention(q, k, v, attn_mask=bias)
    got = drill.reference_attention(q, k, v, bias)

    assert_close(got, want, "additive float mask vs SDPA")


@pytest.mark.clause("P18.7")
def test_a_two_dimensional_mask_broadcasts_over_batch_and_heads():
    q, k, v = qkv(2, 2, 2, 4, 4, 4, seed=24)
    allowed = some_allowed(4, 4, seed=27)

    # the oracle first: the call's writes cannot reach it
    want = loop_attention(q, k, v, allowed)
    got = drill.reference_attention(q, k, v, allowed)

    assert_close(got.double(), want, "[L, S] mask vs loop oracle")


@pytest.mark.clause("P18.8")
@pytest.mark.parametrize("group", [2, 4])
def test_grouped_query_heads_read_their_own_kv_head(group):
    q, k, v = qkv(2, 2 * group, 2, 3, 5, 4, seed=28)

    # the oracle first: the call's writes cannot reach it
    k_given = k.clone()
    v_given = v.clone()
    got = drill.reference_attention(q, k, v)

    repeated = (k_given.repeat_interleave(group, dim=1), v_given.repeat_interleave(group, dim=1))
    want = F.scaled_dot_product_attention(q, *repeated)
    assert_close(got, want, f"GQA group {group} vs repeat_interleave + SDPA")


@pytest.mark.clause("P18.2", "P18.4", "P18.7", "P18.8")
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

    # the oracle first: the call's writes cannot reach it
    want = loop_attention(q, k, v, allowed)
    got = drill.reference_attention(q, k, v, allowed)

    assert got.shape == (B, Hkv * group, L, D)
    assert_close(got.double(), want, "attention vs loop oracle")


@pytest.mark.clause("P18.10")
def test_two_calls_are_identical_and_draw_no_randomness():
    q, k, v = qkv(2, 2, 2, 5, 5, 4, seed=31)
    rng = torch.get_rng_state()

    first = drill.reference_attention(q, k, v, is_causal=True)
    second = drill.reference_attention(q, k, v, is_causal=True)

    assert torch.equal(first, second), "two equal calls differ (dropout?)"
    assert torch.equal(torch.get_rng_state(), rng), "the call drew from the global generator"


@pytest.mark.clause("P18.3", "P18.9")
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_keeps_its_dtype_and_stays_close_to_fp32(dtype):
    q, k, v = qkv(2, 4, 2, 4, 6, 8, seed=34)
    allowed = some_allowed(2, 1, 4, 6, seed=37)
    want = drill.reference_attention(q, k, v, allowed)

    got = drill.reference_attention(q.to(dtype), k.to(dtype), v.to(dtype), allowed)

    assert got.dtype == dtype, f"{dtype} inputs returned {got.dtype}"
    assert_close(got.float(), want, f"{dtype} attention", atol=2e-2, rtol=2e-2)


@pytest.mark.clause("P18.17")
def test_inputs_and_mask_are_not_written():
    q, k, v = qkv(2, 2, 1, 3, 4, 4, seed=38)
    allowed = some_allowed(2, 1, 3, 4, seed=41)

    with inputs_untouched(q=q, k=k, v=v, attn_mask=allowed):
        drill.reference_attention(q, k, v, allowed)


# ---- rejection: valid in every respect but one, before any work ----


@pytest.mark.clause("P18.1")
def test_the_mask_is_taken_positionally_and_the_options_by_keyword():
    q, k, v = qkv(1, 2, 2, 3, 3, 4, seed=49)
    allowed = some_allowed(3, 3, seed=50)
    try:
        got = drill.reference_attention(q, k, v, allowed, is_causal=False, scale=None)
    except TypeError as error:  # a signature mismatch, not a rejected value
        raise AssertionError(f"reference_attention(q, k, v, mask, ...) raised {error}") from error
    assert_close(got.double(), loop_attention(q, k, v, allowed), "mask given positionally")


@pytest.mark.clause("P18.2")
def test_values_with_another_head_dim_give_outputs_of_that_head_dim():
    q, k, _ = qkv(2, 4, 2, 3, 5, 4, seed=51)
    v = seeded(2, 2, 5, 6, seed=52)
    allowed = some_allowed(2, 1, 3, 5, seed=53)

    # the oracle first: the call's writes cannot reach it
    k_given = k.clone()
    v_given = v.clone()
    got = drill.reference_attention(q, k, v, allowed)

    assert tuple(got.shape) == (2, 4, 3, 6), f"Dv = 6 gave {tuple(got.shape)}"
    repeated = (k_given.repeat_interleave(2, dim=1), v_given.repeat_interleave(2, dim=1))
    want = F.scaled_dot_product_attention(q, *repeated, attn_mask=allowed)
    assert_close(got, want, "Dv != D vs repeat_interleave + SDPA")


@pytest.mark.clause("P18.3")
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_the_output_has_the_querys_dtype(dtype):
    q, k, v = (t.to(dtype) for t in qkv(2, 2, 1, 3, 4, 4, seed=54))

    # the oracle first: the call's writes cannot reach it
    want = loop_attention(q, k, v, torch.ones(3, 4, dtype=torch.bool))
    got = drill.reference_attention(q, k, v)

    assert got.dtype == dtype, f"{dtype} inputs returned {got.dtype}"
    assert_close(got.double(), want, "out")


@pytest.mark.clause("P18.9")
@pytest.mark.parametrize("masked", [False, True], ids=["unmasked", "masked"])
def test_float16_scores_past_its_range_are_computed_in_float32(masked):
    # Entries of 40 over D = 64 give raw scores near 1e5 > 65504, float16's largest value.
    q, k, v = qkv(1, 2, 2, 3, 4, 64, seed=55)
    signs = q[:, :, :1].sign()  # every query and key points the same way: q . k ~ 64 * 1600
    q, k = (signs * 40).expand_as(q).half(), (signs * 40 + k).half()
    v = v.half()
    allowed = some_allowed(3, 4, seed=56) if masked else torch.ones(3, 4, dtype=torch.bool)

    # the oracle first: the call's writes cannot reach it
    want = loop_attention(q.double(), k.double(), v.double(), allowed)
    got = drill.reference_attention(q, k, v, allowed if masked else None)

    assert got.dtype == torch.float16, f"float16 inputs returned {got.dtype}"
    assert torch.isfinite(got).all(), "float16 scores overflowed (not computed in float32)"
    assert_close(got.double(), want, "float16 attention with large scores", atol=2e-2, rtol=2e-2)


@pytest.mark.clause("P18.17")
def test_the_output_is_new_memory_not_a_view_of_an_input():
    q, k, v = qkv(2, 2, 2, 3, 3, 4, seed=57)

    got = drill.reference_attention(q, k, v)

    # judged, the storages are the worker's, as it reported them (an advisory clause)
    for name, tensor in ("q", q), ("k", k), ("v", v):
        assert not shares_storage(got, tensor), f"the output lives in {name}'s memory"
