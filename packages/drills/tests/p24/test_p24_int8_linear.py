"""P24 int8_linear(x, weight, scales, bias=None): x [M, I] by int8 weight [O, I], scales [O]."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from gptlab_testkit import assert_close, candidate, test_device
from gptlab_testkit.oracles import inputs_untouched, seeded

drill = candidate("DRILL_P24_MODULE")

pytestmark = [pytest.mark.owner("p24"), pytest.mark.contract]


def int8(rows: int, cols: int, seed: int) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    return torch.randint(-128, 128, (rows, cols), generator=generator, dtype=torch.int8).to(
        test_device()
    )


def scales_for(n: int, seed: int) -> torch.Tensor:
    return seeded(n, seed=seed).abs() * 0.05 + 1e-3


def loop_linear(x, weight, scales, bias=None) -> torch.Tensor:
    """y[m, o] = sum_i x[m, i] * (weight[o, i] * scales[o]) + bias[o], in float64."""
    xs, ws, ss = x.double().tolist(), weight.tolist(), scales.double().tolist()
    bs = bias.double().tolist() if bias is not None else [0.0] * len(ws)
    out = [
        [
            sum(a * (w * s) for a, w in zip(row, ws[o], strict=True)) + bs[o]
            for o, s in enumerate(ss)
        ]
        for row in xs
    ]
    return torch.tensor(out, dtype=torch.float64, device=x.device)


@pytest.mark.clause("P24.3", "P24.4")
def test_fp32_output_equals_the_dequantized_float_layer():
    x, weight, scales, bias = (
        seeded(3, 8, seed=1),
        int8(5, 8, seed=2),
        scales_for(5, 3),
        seeded(5, seed=4),
    )

    # the oracle first: the call's writes cannot reach it
    want = loop_linear(x, weight, scales, bias)
    got = drill.int8_linear(x, weight, scales, bias)

    assert got.shape == (3, 5) and got.dtype == torch.float32, f"{got.dtype} {tuple(got.shape)}"
    assert_close(got.double(), want, "int8 linear vs loop oracle")


@pytest.mark.clause("P24.4")
def test_without_a_bias_nothing_is_added():
    x, weight, scales = seeded(2, 6, seed=5), int8(4, 6, seed=6), scales_for(4, 7)

    # the oracle first: the call's writes cannot reach it
    want = loop_linear(x, weight, scales)
    got = drill.int8_linear(x, weight, scales)

    assert_close(got.double(), want, "bias-free int8 linear")


@pytest.mark.clause("P24.4")
def test_each_output_column_is_scaled_by_its_own_channels_scale():
    x, weight = seeded(2, 4, seed=8), int8(3, 4, seed=9)
    scales = torch.tensor([1.0, 1.0, 1.0], device=test_device())
    base = drill.int8_linear(x, weight, scales)

    doubled = drill.int8_linear(x, weight, torch.tensor([1.0, 2.0, 1.0], device=test_device()))

    assert_close(doubled[:, 1], 2 * base[:, 1], "column 1 after doubling its scale")
    assert_close(doubled[:, [0, 2]], base[:, [0, 2]], "columns whose scale did not change")


@pytest.mark.clause("P24.4")
def test_weights_at_the_int8_extremes_keep_their_sign_and_size():
    x = torch.ones(1, 2, device=test_device())
    weight = torch.tensor([[-128, -128], [127, 127]], dtype=torch.int8, device=test_device())

    got = drill.int8_linear(x, weight, torch.tensor([0.5, 0.5], device=test_device()))

    assert_close(got, torch.tensor([[-128.0, 127.0]], device=test_device()), "extreme weights")


@pytest.mark.clause("P24.5", "P24.3")
@pytest.mark.parametrize("with_bias", [False, True], ids=["no bias", "bias"])
def test_half_precision_products_are_accumulated_wider_than_half(with_bias):
    # 64 products of about 100 * 127 sum past fp16's 65504; the small scales bring it back.
    x = torch.full((2, 64), 100.0, device=test_device()) + seeded(2, 64, seed=10)
    weight = torch.full((3, 64), 127, dtype=torch.int8, device=test_device())
    scales = torch.tensor([1e-3, 2e-3, 5e-4], device=test_device())
    bias = seeded(3, seed=11) if with_bias else None

    # the oracle first: the call's writes cannot reach it
    want = loop_linear(x.half(), weight, scales, bias.half() if with_bias else None)
    got = drill.int8_linear(x.half(), weight, scales, bias.half() if with_bias else None)

    assert got.dtype == torch.float16, f"fp16 x returned {got.dtype}"
    assert bool(torch.isfinite(got).all()), f"fp16 output overflowed: {got.tolist()}"
    assert_close(got.double(), want, "fp16 int8 linear", atol=1e-2, rtol=2e-3)


@pytest.mark.clause("P24.3")
def test_bfloat16_input_returns_bfloat16_close_to_the_float_layer():
    x, weight, scales = (
        seeded(3, 16, seed=12, dtype=torch.bfloat16),
        int8(4, 16, 13),
        scales_for(4, 14),
    )

    # the oracle first: the call's writes cannot reach it
    want = loop_linear(x, weight, scales)
    got = drill.int8_linear(x, weight, scales)

    assert got.dtype == torch.bfloat16, f"bf16 x returned {got.dtype}"
    assert_close(got.double(), want, "bf16 int8 linear", atol=5e-2, rtol=2e-2)


@pytest.mark.clause("P24.2", "P24.4")
@settings(max_examples=20, deadline=None)
@given(
    M=st.integers(1, 4), In=st.integers(1, 9), Out=st.integers(1, 5),
    with_bias=st.booleans(), seed=st.integers(0, 2**16),
)  # fmt: skip
def test_any_small_layer_matches_the_loop_oracle(M, In, Out, with_bias, seed):
    x, weight, scales = seeded(M, In, seed=seed), int8(Out, In, seed + 1), scales_for(Out, seed + 2)
    bias = seeded(Out, seed=seed + 3) if with_bias else None

    # the oracle first: the call's writes cannot reach it
    want = loop_linear(x, weight, scales, bias)
    got = drill.int8_linear(x, weight, scales, bias)

    assert got.shape == (M, Out)
    assert_close(got.double(), want, "int8 linear vs loop oracle")


@pytest.mark.clause("P24.9")
def test_inputs_are_only_read_and_the_weight_stays_int8():
    x, weight, scales, bias = (
        seeded(2, 4, seed=15),
        int8(3, 4, 16),
        scales_for(3, 17),
        seeded(3, seed=18),
    )
    with inputs_untouched(x=x, weight=weight, scales=scales, bias=bias):
        drill.int8_linear(x, weight, scales, bias)


# ---- rejection: valid in every respect but one ----


def valid_call() -> dict:
    return {"x": seeded(2, 4, seed=19), "weight": int8(3, 4, 20), "scales": scales_for(3, 21),
            "bias": seeded(3, seed=22)}  # fmt: skip


@pytest.mark.clause("P24.1", "P24.2")
def test_a_positional_call_without_a_bias_gives_m_by_o():
    call = valid_call()
    # the oracle first: the call's writes cannot reach it
    want = loop_linear(call["x"], call["weight"], call["scales"])
    try:
        got = drill.int8_linear(call["x"], call["weight"], call["scales"])
    except TypeError as error:  # a signature mismatch
        raise AssertionError(f"int8_linear(x, weight, scales): {error}") from error
    assert tuple(got.shape) == (2, 3), f"[2, 4] x [3, 4] gave {tuple(got.shape)}"
    assert_close(got.double(), want, "no bias")
