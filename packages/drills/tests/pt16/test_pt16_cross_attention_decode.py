"""PT16 cross_attention_decode(q [B,Hq,D], encoder_k/v [B,Hkv,Te,D], encoder_lengths [B])."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from gptlab_testkit import BAD_VALUE, assert_rejects, candidate, test_device
from gptlab_testkit.oracles import assert_binds, inputs_untouched, loop_attention, seeded

drill = candidate("DRILL_PT16_MODULE")

pytestmark = [pytest.mark.owner("pt16"), pytest.mark.contract]


def lengths(values: list[int]) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.long, device=test_device())


def cache(B: int, Hkv: int, Te: int, D: int, lens: list[int], seed: int):
    """Encoder K/V with garbage (large values) past each row's length."""
    k, v = seeded(B, Hkv, Te, D, seed=seed), seeded(B, Hkv, Te, D, seed=seed + 1)
    for b, n in enumerate(lens):
        k[b, :, n:] = 1e4
        v[b, :, n:] = -1e4
    return k, v


def oracle(q, k, v, lens: list[int]) -> torch.Tensor:
    """Decomposed float64 attention per row; a row with no encoder token is zeros."""
    B, Hq, D = q.shape
    out = torch.zeros(B, Hq, D, dtype=torch.float64)
    for b, n in enumerate(lens):
        if n:
            row = loop_attention(q[b : b + 1, :, None], k[b : b + 1, :, :n], v[b : b + 1, :, :n],
                                 torch.ones(1, 1, 1, n, dtype=torch.bool))  # fmt: skip
            out[b] = row[0, :, 0].cpu()
    return out


def check(q, k, v, lens: list[int], what: str) -> torch.Tensor:
    # the oracle first: the call's writes cannot reach it
    want = oracle(q, k, v, lens)
    got = drill.cross_attention_decode(q, k, v, lengths(lens))
    assert tuple(got.shape) == tuple(q.shape), f"{what}: shape {tuple(got.shape)}"
    assert not got.isnan().any(), f"{what}: NaN in the output\n{got}"
    torch.testing.assert_close(got.double().cpu(), want, rtol=1e-5, atol=1e-5,
                               msg=lambda m: f"{what}: {m}")  # fmt: skip
    return got


@pytest.mark.clause("PT16.2", "PT16.4", "PT16.5")
@pytest.mark.parametrize(("Hq", "Hkv"), [(4, 4), (8, 2)], ids=["ratio 1", "ratio 4"])
def test_mixed_encoder_lengths_match_the_decomposed_oracle(Hq, Hkv):
    lens = [6, 2, 5]
    q, (k, v) = seeded(3, Hq, 8, seed=1), cache(3, Hkv, 6, 8, lens, seed=2)
    check(q, k, v, lens, f"Hq={Hq}, Hkv={Hkv}")


@pytest.mark.clause("PT16.5")
def test_query_head_groups_read_their_own_kv_head():
    lens = [3, 3]
    q, (k, v) = seeded(2, 8, 4, seed=3), cache(2, 2, 3, 4, lens, seed=4)
    v[:, 1] += 10.0  # heads 4-7 (group 1) read K/V head 1: outputs near 10
    got = check(q, k, v, lens, "ratio 4, K/V head 1 shifted")
    assert bool((got[:, 4:] > 5).all() and (got[:, :4] < 5).all()), "heads read the wrong K/V"


@pytest.mark.clause("PT16.4")
def test_a_single_encoder_token_is_copied_through():
    q, (k, v) = seeded(2, 4, 4, seed=5), cache(2, 2, 1, 4, [1, 1], seed=6)
    got = check(q, k, v, [1, 1], "Te = 1")
    torch.testing.assert_close(got, v[:, [0, 0, 1, 1], 0], rtol=1e-6, atol=1e-6)


@pytest.mark.clause("PT16.4")
def test_a_single_valid_token_in_a_later_row_ignores_that_rows_padding():
    lens = [4, 1, 3]
    q, (k, v) = seeded(3, 2, 4, seed=7), cache(3, 2, 4, 4, lens, seed=8)
    got = check(q, k, v, lens, "row 1 has one token")
    torch.testing.assert_close(got[1], v[1, :, 0], rtol=1e-6, atol=1e-6)


@pytest.mark.clause("PT16.6")
@pytest.mark.parametrize("layout", ["capacity slice", "time-major cache", "strided time"])
def test_noncontiguous_cache_views_are_read_by_their_logical_layout(layout):
    lens = [5, 3]
    full_k, full_v = cache(2, 2, 10, 4, [10, 10], seed=9)
    views = {
        "capacity slice": (full_k[:, :, :5], full_v[:, :, :5]),
        "time-major cache": (full_k.transpose(1, 2).contiguous().transpose(1, 2)[:, :, 2:7],
                             full_v.transpose(1, 2).contiguous().transpose(1, 2)[:, :, 2:7]),
        "strided time": (full_k[:, :, ::2], full_v[:, :, ::2]),
    }  # fmt: skip
    k, v = views[layout]
    assert not k.is_contiguous() and not v.is_contiguous()
    check(seeded(2, 4, 4, seed=10), k, v, lens, layout)


@pytest.mark.clause("PT16.7")
def test_a_zero_length_encoder_row_gives_zeros_without_nan():
    lens = [3, 0, 2]
    q, (k, v) = seeded(3, 4, 4, seed=11), cache(3, 2, 3, 4, lens, seed=12)
    got = check(q, k, v, lens, "row 1 has no encoder token")
    assert bool((got[1] == 0).all()), f"row 1: {got[1].tolist()}"


@pytest.mark.clause("PT16.7")
def test_an_empty_encoder_for_every_row_gives_zeros():
    q = seeded(2, 4, 4, seed=13)
    k = v = seeded(2, 2, 0, 4, seed=14)
    got = check(q, k, v, [0, 0], "Te = 0")
    assert bool((got == 0).all())


@pytest.mark.clause("PT16.3")
def test_the_output_has_qs_dtype_and_device():
    lens = [2, 3]
    q, (k, v) = seeded(2, 2, 4, seed=15), cache(2, 1, 3, 4, lens, seed=16)
    got = drill.cross_attention_decode(q, k, v, lengths(lens).int())
    assert got.dtype == torch.float32 and got.device == q.device, f"{got.dtype} {got.device}"


@pytest.mark.clause("PT16.2", "PT16.4", "PT16.5", "PT16.7")
@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_any_small_problem_matches_the_oracle(data):
    ranges = [("B", 1, 3), ("Hkv", 1, 2), ("G", 1, 3), ("Te", 0, 5), ("D", 1, 4)]
    B, Hkv, G, Te, D = (data.draw(st.integers(lo, hi), label=n) for n, lo, hi in ranges)
    lens = [data.draw(st.integers(0, Te), label=f"len[{b}]") for b in range(B)]
    seed = data.draw(st.integers(0, 2**16), label="seed")
    q, (k, v) = seeded(B, Hkv * G, D, seed=seed), cache(B, Hkv, Te, D, lens, seed=seed + 1)
    check(q, k, v, lens, f"B={B}, Hkv={Hkv}, G={G}, Te={Te}, lens={lens}")


@pytest.mark.clause("PT16.10")
def test_no_dropout_the_same_call_gives_the_same_bits_under_any_global_seed():
    lens = [4, 2]
    q, (k, v) = seeded(2, 4, 4, seed=17), cache(2, 2, 4, 4, lens, seed=18)
    torch.manual_seed(0)
    first = check(q, k, v, lens, "seed 0")
    torch.manual_seed(1234)
    second = drill.cross_attention_decode(q, k, v, lengths(lens))
    assert torch.equal(first, second), "two calls differ: something random (dropout?) ran"


@pytest.mark.clause("PT16.9")
def test_the_encoder_cache_and_the_query_are_only_read():
    lens = [4, 2]
    full_k, full_v = cache(2, 2, 6, 4, [6, 6], seed=19)
    k, v, q, n = full_k[:, :, :4], full_v[:, :, :4], seeded(2, 4, 4, seed=20), lengths(lens)
    with inputs_untouched(q=q, encoder_k=full_k, encoder_v=full_v, encoder_lengths=n):
        got = drill.cross_attention_decode(q, k, v, n)
    torch.testing.assert_close(got.double().cpu(), oracle(q, k, v, lens), rtol=1e-5, atol=1e-5)


@pytest.mark.clause("PT16.1")
def test_the_arguments_bind_by_name_in_the_kits_order():
    lens = [3, 1]
    q, (k, v) = seeded(2, 4, 4, seed=21), cache(2, 2, 3, 4, lens, seed=22)
    n = lengths(lens)
    assert_binds(drill.cross_attention_decode, q, k, v, n)
    assert_binds(drill.cross_attention_decode, encoder_lengths=n, encoder_v=v, encoder_k=k, q=q)
    got = drill.cross_attention_decode(encoder_lengths=n, encoder_v=v, encoder_k=k, q=q)
    torch.testing.assert_close(got.double().cpu(), oracle(q, k, v, lens), rtol=1e-5, atol=1e-5)


# ---- rejection: valid in every respect but one, before any work ----


def valid_call() -> dict[str, torch.Tensor]:
    k, v = cache(2, 2, 4, 4, [4, 2], seed=23)
    return {"q": seeded(2, 4, 4, seed=24), "encoder_k": k, "encoder_v": v,
            "encoder_lengths": lengths([4, 2])}  # fmt: skip


@pytest.mark.clause("PT16.8")
@pytest.mark.parametrize(
    "shape", [(2, 2, 5, 4), (2, 1, 4, 4), (2, 2, 4, 3)], ids=["Te", "Hkv", "D"]
)
@pytest.mark.parametrize("which", ["encoder_k", "encoder_v"])
def test_k_and_v_of_different_shapes_are_rejected(shape, which):
    call = valid_call()
    call[which] = seeded(*shape, seed=25)
    with inputs_untouched(**call):
        assert_rejects(lambda: drill.cross_attention_decode(**call), BAD_VALUE,
                       ("encoder_k", "encoder_v"))  # fmt: skip


@pytest.mark.clause("PT16.8")
@pytest.mark.parametrize(("Hq", "Hkv"), [(3, 2), (4, 3), (2, 4)])
def test_query_heads_not_a_multiple_of_kv_heads_are_rejected(Hq, Hkv):
    k, v = cache(2, Hkv, 4, 4, [4, 2], seed=26)
    call = {"q": seeded(2, Hq, 4, seed=27), "encoder_k": k, "encoder_v": v,
            "encoder_lengths": lengths([4, 2])}  # fmt: skip
    with inputs_untouched(**call):
        assert_rejects(lambda: drill.cross_attention_decode(**call), BAD_VALUE,
                       ("q", "encoder_k", "encoder_v"), values=[Hq, Hkv])  # fmt: skip
