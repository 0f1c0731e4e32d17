"""P18 extension: this project's rules beyond the kit's (validation; is_causal with L < S)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from gptlab_testkit import assert_close, assert_rejects, candidate
from gptlab_testkit.oracles import inputs_untouched, seeded

drill = candidate("DRILL_P18_MODULE")

pytestmark = [pytest.mark.owner("p18"), pytest.mark.extension]


WRONG_KIND = (TypeError, ValueError)  # the wrong kind of object or dtype: either is accepted


def some_allowed(*shape: int, seed: int) -> torch.Tensor:
    """A random boolean mask [..., L, S] where every query may attend key 0 at least."""
    allowed = seeded(*shape, seed=seed) > 0
    allowed[..., 0] = True
    return allowed


def valid_call() -> dict[str, torch.Tensor]:
    q, k, v = qkv(2, 4, 2, 3, 5, 4, seed=42)
    return {"q": q, "k": k, "v": v}


def qkv(B, Hq, Hkv, L, S, D, seed):
    return (
        seeded(B, Hq, L, D, seed=seed),
        seeded(B, Hkv, S, D, seed=seed + 1),
        seeded(B, Hkv, S, D, seed=seed + 2),
    )


@pytest.mark.clause("P18.18")
def test_causal_with_fewer_queries_than_keys_is_sdpas_top_left_triangle():
    q, k, v = seeded(1, 2, 2, 4, seed=1), seeded(1, 2, 5, 4, seed=2), seeded(1, 2, 5, 4, seed=3)

    got = drill.reference_attention(q, k, v, is_causal=True)

    assert_close(got, F.scaled_dot_product_attention(q, k, v, is_causal=True), "L < S causal")


@pytest.mark.clause("P18.12")
def test_query_heads_not_a_multiple_of_kv_heads_are_rejected():
    call = {**valid_call(), "q": seeded(2, 3, 3, 4, seed=45)}
    with inputs_untouched(**call):
        assert_rejects(lambda: drill.reference_attention(**call), ValueError, ("q", "k"))


@pytest.mark.clause("P18.13")
def test_keys_and_values_of_different_lengths_are_rejected():
    call = {**valid_call(), "v": seeded(2, 2, 4, 4, seed=46)}
    with inputs_untouched(**call):
        assert_rejects(lambda: drill.reference_attention(**call), ValueError, ("v", "k"))


@pytest.mark.clause("P18.14")
def test_a_key_head_dim_unlike_the_querys_is_rejected():
    call = {**valid_call(), "k": seeded(2, 2, 5, 3, seed=47)}
    with inputs_untouched(**call):
        assert_rejects(lambda: drill.reference_attention(**call), ValueError, ("k", "q"))


@pytest.mark.clause("P18.15")
def test_a_mask_that_does_not_broadcast_to_the_scores_is_rejected():
    call = valid_call()
    mask = torch.ones(2, 1, 3, 4, dtype=torch.bool)  # S is 5
    with inputs_untouched(**call, mask=mask):
        assert_rejects(
            lambda: drill.reference_attention(call["q"], call["k"], call["v"], mask),
            ValueError,
            ("attn_mask", "mask"),
        )


@pytest.mark.clause("P18.14")
def test_keys_of_batch_one_against_queries_of_batch_two_are_rejected():
    call = valid_call()
    call = {**call, "k": call["k"][:1].clone(), "v": call["v"][:1].clone()}
    with inputs_untouched(**call):
        assert_rejects(lambda: drill.reference_attention(**call), ValueError, ("k", "q", "v"))


@pytest.mark.clause("P18.11")
@pytest.mark.parametrize("name", ["q", "k", "v"])
def test_a_tensor_that_is_not_four_dimensional_is_rejected(name):
    call = valid_call()
    call[name] = call[name][0].clone()
    with inputs_untouched(**call):
        assert_rejects(lambda: drill.reference_attention(**call), WRONG_KIND, name)


@pytest.mark.clause("P18.11")
@pytest.mark.parametrize(
    ("name", "dtype"),
    [("q", torch.int64), ("k", torch.float64), ("v", torch.float16)],
    ids=["integer-q", "float64-k", "float16-v"],
)
def test_an_integer_tensor_or_a_dtype_unlike_qs_is_rejected(name, dtype):
    call = valid_call()
    call[name] = call[name].to(dtype)
    with inputs_untouched(**call):
        assert_rejects(lambda: drill.reference_attention(**call), WRONG_KIND, name)


@pytest.mark.clause("P18.15")
@pytest.mark.parametrize("kind", ["0/1 integers", "a list"])
def test_a_mask_that_is_neither_bool_nor_float_is_rejected(kind):
    call = valid_call()
    allowed = some_allowed(2, 1, 3, 5, seed=48)
    mask = allowed.long() if kind == "0/1 integers" else allowed.tolist()
    with inputs_untouched(**call):
        assert_rejects(
            lambda: drill.reference_attention(call["q"], call["k"], call["v"], mask),
            WRONG_KIND,
            ("attn_mask", "mask"),
        )


@pytest.mark.clause("P18.16")
@pytest.mark.parametrize("scale", [float("nan"), float("inf"), True, "0.5"], ids=repr)
def test_a_scale_that_is_not_a_finite_number_is_rejected(scale):
    call = valid_call()
    with inputs_untouched(**call):
        assert_rejects(lambda: drill.reference_attention(**call, scale=scale), WRONG_KIND, "scale")


@pytest.mark.clause("P18.16")
@pytest.mark.parametrize("is_causal", [1, "yes", None], ids=repr)
def test_is_causal_that_is_not_a_bool_is_rejected(is_causal):
    call = valid_call()
    with inputs_untouched(**call):
        assert_rejects(
            lambda: drill.reference_attention(**call, is_causal=is_causal), WRONG_KIND, "is_causal"
        )


@pytest.mark.clause("P18.15")
def test_a_five_dimensional_mask_is_rejected():
    call = valid_call()
    mask = torch.ones(1, 2, 1, 3, 5, dtype=torch.bool)  # broadcasts to 5-D, not to the scores
    with inputs_untouched(**call, mask=mask):
        assert_rejects(
            lambda: drill.reference_attention(call["q"], call["k"], call["v"], mask),
            ValueError,
            ("attn_mask", "mask"),
        )
