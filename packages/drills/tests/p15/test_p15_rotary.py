"""P15 apply_rotary(q, k, positions, theta): rotate-half RoPE at explicit positions."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from gptlab_testkit import (
    assert_close,
    assert_rejects,
    candidate,
    shares_storage,
    test_device,
)
from gptlab_testkit.oracles import assert_binds, inputs_untouched, seeded

drill = candidate("DRILL_P15_MODULE")

pytestmark = [pytest.mark.owner("p15"), pytest.mark.contract]


def loop_rotary(x: torch.Tensor, positions: torch.Tensor, theta: float) -> torch.Tensor:
    """One pair at a time in float64: channel i with i + D/2, angle p * theta^(-2i/D)."""
    B, H, T, D = x.shape
    half = D // 2
    pos = positions.expand(B, T).tolist()
    values = x.double().tolist()
    out = torch.zeros(B, H, T, D, dtype=torch.float64)
    for b in range(B):
        for h in range(H):
            for t in range(T):
                v = values[b][h][t]
                for i in range(half):
                    a = pos[b][t] * theta ** (-2 * i / D)
                    out[b, h, t, i] = v[i] * math.cos(a) - v[i + half] * math.sin(a)
                    out[b, h, t, i + half] = v[i + half] * math.cos(a) + v[i] * math.sin(a)
    return out.to(x.device)


def long(values) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.long, device=test_device())


def rotate(q, k, positions, **kwargs):
    got_q, got_k = drill.apply_rotary(q, k, positions, **kwargs)
    assert got_q.shape == q.shape and got_k.shape == k.shape
    assert got_q.dtype == q.dtype and got_k.dtype == k.dtype
    return got_q, got_k


@pytest.mark.clause("P15.2", "P15.4", "P15.6")
@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_any_small_shape_matches_the_loop_oracle(data):
    B, T = data.draw(st.integers(1, 3), label="B"), data.draw(st.integers(1, 4), label="T")
    Hkv = data.draw(st.integers(1, 2), label="Hkv")
    Hq = Hkv * data.draw(st.sampled_from([1, 2, 4]), label="group")
    D = 2 * data.draw(st.integers(1, 4), label="D / 2")
    per_row = data.draw(st.booleans(), label="positions per row")
    shape = (B, T) if per_row else (T,)
    positions = long(
        data.draw(
            st.lists(st.integers(0, 50), min_size=math.prod(shape), max_size=math.prod(shape)),
            label="positions",
        )
    )
    positions = positions.reshape(shape)
    seed = data.draw(st.integers(0, 2**16), label="seed")
    q, k = seeded(B, Hq, T, D, seed=seed), seeded(B, Hkv, T, D, seed=seed + 1)

    # the oracle first: the call's writes cannot reach it
    want = loop_rotary(q, positions, 10000.0)
    want_2 = loop_rotary(k, positions, 10000.0)
    got_q, got_k = rotate(q, k, positions)

    assert_close(got_q.double(), want, "q vs loop oracle")
    assert_close(got_k.double(), want_2, "k vs loop oracle")


@pytest.mark.clause("P15.4")
def test_position_zero_is_the_identity():
    q, k = seeded(2, 2, 3, 8, seed=1), seeded(2, 1, 3, 8, seed=2)

    # the oracle first: the call's writes cannot reach it
    q_given = q.clone()
    k_given = k.clone()
    got_q, got_k = rotate(q, k, long([0, 0, 0]))

    assert_close(got_q, q_given, "q at position 0")
    assert_close(got_k, k_given, "k at position 0")


@pytest.mark.clause("P15.4")
def test_each_channel_pair_keeps_its_norm():
    q, k = seeded(1, 2, 4, 8, seed=3), seeded(1, 2, 4, 8, seed=4)

    # the oracle first: the call's writes cannot reach it
    q_given = q.clone()
    got_q, _ = rotate(q, k, long([3, 17, 250, 4000]))

    def pair_norms(x):
        first, second = x.double().chunk(2, dim=-1)
        return (first.square() + second.square()).sqrt()

    assert_close(pair_norms(got_q), pair_norms(q_given), "norm of each (i, i + D/2) pair")


@pytest.mark.clause("P15.4")
def test_scores_depend_only_on_the_distance_between_positions():
    q, k = seeded(1, 1, 1, 8, seed=5), seeded(1, 1, 1, 8, seed=6)

    def score(query_position, key_position):
        rq, _ = rotate(q, k, long([query_position]))
        _, rk = rotate(q, k, long([key_position]))
        return float((rq.double() * rk.double()).sum())

    assert score(9, 4) == pytest.approx(score(105, 100), abs=1e-4)
    assert score(9, 4) != pytest.approx(score(9, 5), abs=1e-4)


@pytest.mark.clause("P15.6")
def test_prefill_equals_one_token_decode_at_the_same_positions():
    q, k = seeded(2, 4, 5, 8, seed=7), seeded(2, 2, 5, 8, seed=8)
    positions = long([[0, 1, 2, 3, 4], [7, 8, 9, 10, 11]])

    full_q, full_k = rotate(q, k, positions)

    for t in range(5):
        step_q, step_k = rotate(q[:, :, t : t + 1], k[:, :, t : t + 1], positions[:, t : t + 1])
        assert_close(step_q, full_q[:, :, t : t + 1], f"q of token {t} alone")
        assert_close(step_k, full_k[:, :, t : t + 1], f"k of token {t} alone")


@pytest.mark.clause("P15.6")
def test_rows_at_different_offsets_each_follow_their_own_positions():
    q, k = seeded(2, 2, 3, 6, seed=9), seeded(2, 1, 3, 6, seed=10)
    positions = long([[0, 1, 2], [40, 41, 42]])

    got_q, got_k = rotate(q, k, positions)

    for row in range(2):
        alone_q, alone_k = rotate(q[row : row + 1], k[row : row + 1], positions[row])
        assert_close(got_q[row : row + 1], alone_q, f"row {row} q vs alone with [T] positions")
        assert_close(got_k[row : row + 1], alone_k, f"row {row} k vs alone with [T] positions")


@pytest.mark.clause("P15.5")
def test_theta_sets_the_frequencies():
    q, k = seeded(1, 2, 3, 8, seed=11), seeded(1, 2, 3, 8, seed=12)
    positions = long([1, 5, 30])

    # the oracle first: the call's writes cannot reach it
    want = loop_rotary(q, positions, 500.0)
    want_2 = loop_rotary(k, positions, 500.0)
    got_q, got_k = rotate(q, k, positions, theta=500.0)

    assert_close(got_q.double(), want, "q with theta = 500")
    assert_close(got_k.double(), want_2, "k with theta = 500")


@pytest.mark.clause("P15.3", "P15.7")
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_inputs_at_large_positions_use_full_precision_angles(dtype):
    # An fp16 angle p * freq near p = 3000 is off by radians; only fp32 angles stay close.
    q, k = seeded(1, 2, 4, 16, seed=13), seeded(1, 1, 4, 16, seed=14)
    positions = long([3001, 3002, 3003, 3004])

    got_q, got_k = rotate(q.to(dtype), k.to(dtype), positions)

    for name, got, x in (("q", got_q, q), ("k", got_k, k)):
        want = loop_rotary(x.to(dtype), positions, 10000.0)
        assert_close(got.double(), want, f"{dtype} {name} at ~3000", atol=3e-2, rtol=3e-2)


@pytest.mark.clause("P15.13")
def test_inputs_are_not_written():
    q, k, positions = seeded(2, 2, 3, 4, seed=15), seeded(2, 1, 3, 4, seed=16), long([2, 4, 6])

    with inputs_untouched(q=q, k=k, positions=positions):
        rotate(q, k, positions)


# ---- rejection: valid in every respect but one ----


def valid_call():
    return {
        "q": seeded(2, 4, 3, 8, seed=17),
        "k": seeded(2, 2, 3, 8, seed=18),
        "positions": long([[0, 1, 2], [5, 6, 7]]),
    }


@pytest.mark.clause("P15.8")
def test_an_odd_head_dim_is_rejected():
    call = {**valid_call(), "q": seeded(2, 4, 3, 7, seed=19), "k": seeded(2, 2, 3, 7, seed=20)}
    with inputs_untouched(**call):
        assert_rejects(lambda: drill.apply_rotary(**call), ValueError, ("q", "k", "D", "dim"))


@pytest.mark.clause("P15.1")
def test_the_signature_takes_the_documented_arguments():
    call = valid_call()

    assert_binds(drill.apply_rotary, call["q"], call["k"], call["positions"])
    assert_binds(drill.apply_rotary, call["q"], call["k"], call["positions"], theta=500.0)
    got_q, _ = rotate(call["q"], call["k"], call["positions"])
    assert_close(got_q.double(), loop_rotary(call["q"], call["positions"], 10000.0), "q")


@pytest.mark.clause("P15.2", "P15.4", "P15.5")
def test_grouped_heads_match_the_loop_oracle_at_the_default_theta():
    q, k = seeded(2, 4, 3, 8, seed=30), seeded(2, 2, 3, 8, seed=31)
    positions = long([[3, 9, 27], [0, 100, 2000]])

    # the oracle first: the call's writes cannot reach it
    want = loop_rotary(q, positions, 10000.0)
    want_2 = loop_rotary(k, positions, 10000.0)
    got_q, got_k = rotate(q, k, positions)

    assert_close(got_q.double(), want, "q, theta 10000")
    assert_close(got_k.double(), want_2, "k, theta 10000")


@pytest.mark.clause("P15.5")
def test_a_small_theta_differs_from_the_default():
    q, k = seeded(1, 1, 2, 8, seed=32), seeded(1, 1, 2, 8, seed=33)
    positions = long([7, 11])

    # the oracle first: the call's writes cannot reach it
    want = loop_rotary(q, positions, 100.0)
    got_q, _ = rotate(q, k, positions, theta=100.0)

    assert_close(got_q.double(), want, "q with theta = 100")


@pytest.mark.clause("P15.3", "P15.4")
def test_float64_and_mixed_dtypes_keep_their_own_dtype():
    q = seeded(1, 2, 3, 6, seed=34, dtype=torch.float64)
    k = seeded(1, 1, 3, 6, seed=35, dtype=torch.float16)
    positions = long([1, 2, 40])

    # the oracle first: the call's writes cannot reach it
    want = loop_rotary(q, positions, 10000.0)
    want_k = loop_rotary(k, positions, 10000.0)
    got_q, got_k = rotate(q, k, positions)

    assert_close(got_q, want, "fp64 q")  # fp32 inside accepted
    assert_close(got_k.double(), want_k, "fp16 k", atol=1e-2, rtol=1e-2)


@pytest.mark.clause("P15.3")
@pytest.mark.parametrize("dtype", [torch.int32, torch.int16, torch.uint8])
def test_positions_of_another_integer_dtype_are_accepted(dtype):
    q, k = seeded(2, 2, 3, 4, seed=36), seeded(2, 1, 3, 4, seed=37)
    positions = long([[0, 5, 9], [3, 4, 120]])

    # the oracle first: the call's writes cannot reach it
    want = loop_rotary(q, positions, 10000.0)
    try:
        got_q, _ = rotate(q, k, positions.to(dtype))
    except Exception as error:  # the clause accepts it: a rejection is this test's failure
        raise AssertionError(f"{dtype} positions were refused: {error}") from error

    assert_close(got_q.double(), want, f"{dtype} positions")


@pytest.mark.clause("P15.13")
def test_the_outputs_are_new_tensors():
    q, k = seeded(1, 2, 3, 4, seed=38), seeded(1, 1, 3, 4, seed=39)

    got_q, got_k = rotate(q, k, long([0, 0, 0]))

    for got in (got_q, got_k):
        assert not shares_storage(got, q) and not shares_storage(got, k), "an output aliases"
