"""P23 quantize_affine(x, axis=None) -> (q, scale, zero_point); dequantize_affine(q, scale,
zero_point, axis=None). 256 levels, uint8 0..255 or int8 -128..127 (the candidate's choice)."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from gptlab_testkit import candidate, test_device
from gptlab_testkit.oracles import inputs_untouched, seeded

drill = candidate("DRILL_P23_MODULE")

pytestmark = [pytest.mark.owner("p23"), pytest.mark.contract]

LEVELS = {torch.uint8: (0, 255), torch.int8: (-128, 127)}


def tensor(values) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.float32, device=test_device())


def params(value) -> torch.Tensor:
    """A per-tensor parameter may be 0-D or [1]; per channel it is [C]."""
    return torch.as_tensor(value).reshape(-1).double()


def loop_scales(x: torch.Tensor, axis: int | None) -> list[float]:
    """(max(x, 0) - min(x, 0)) / 255 per channel (per tensor when axis is None)."""
    channels = [x.reshape(-1)] if axis is None else list(x.movedim(axis, 0).double())
    scales = []
    for channel in channels:
        values = channel.reshape(-1).tolist()
        low, high = min(min(values), 0.0), max(max(values), 0.0)
        scales.append((high - low) / 255)
    return scales


def round_trip(x: torch.Tensor, axis: int | None = None):
    q, scale, zero_point = drill.quantize_affine(x, axis)
    assert q.shape == x.shape, f"q shape {tuple(q.shape)}, x {tuple(x.shape)}"
    assert q.dtype in LEVELS, f"q must be uint8 or int8, got {q.dtype}"
    want = (1,) if axis is None else (x.shape[axis],)
    for name, param in (("scale", scale), ("zero_point", zero_point)):
        shape = tuple(torch.as_tensor(param).shape)
        assert shape in ((), (1,)) if axis is None else shape == want, f"{name} shape {shape}"
    steps = params(scale)
    assert bool(((steps > 0) & steps.isfinite()).all()), f"scale {steps.tolist()} must be > 0"
    back = drill.dequantize_affine(q, scale, zero_point, axis)
    assert back.dtype == torch.float32, f"dequantize_affine returned {back.dtype}, not float32"
    assert back.shape == x.shape, f"x' shape {tuple(back.shape)}, x {tuple(x.shape)}"
    return q, params(scale), back.double()


def assert_within_half_a_step(x, axis, scale, back):
    """|x - back| <= scale / 2 per element (its channel's scale), with float slack."""
    shape = [1] * x.dim()
    if axis is not None:
        shape[axis] = -1
    step = scale.reshape(shape) if axis is not None else scale
    error = (x.double() - back).abs()
    bound = step / 2 * (1 + 1e-5) + 1e-7
    worst = (error - bound).max()
    assert worst <= 0, f"round-trip error exceeds scale / 2 by {float(worst):.3g}"


@pytest.mark.clause("P23.2", "P23.4")
def test_per_tensor_round_trip_is_within_half_a_step():
    x = seeded(4, 6, seed=1) * 3
    _, scale, back = round_trip(x)

    assert scale.numel() == 1, f"per-tensor scale has {scale.numel()} entries"
    assert torch.allclose(scale, torch.tensor(loop_scales(x, None), dtype=torch.float64))
    assert_within_half_a_step(x, None, scale, back)


@pytest.mark.clause("P23.5")
def test_zero_round_trips_exactly_even_when_every_value_is_positive():
    for x in (tensor([[0.0, 0.3, 2.5], [1.0, 0.0, 4.0]]), tensor([-3.0, 0.0, 7.5, 0.0])):
        _, _, back = round_trip(x)
        assert bool((back[x == 0] == 0).all()), f"zeros came back as {back[x == 0].tolist()}"


@pytest.mark.clause("P23.4")
def test_the_extremes_use_the_first_and_last_level():
    x = seeded(3, 5, seed=2)
    q, _, _ = round_trip(x)
    qmin, qmax = LEVELS[q.dtype]
    assert int(q[x == x.min()].item()) == qmin and int(q[x == x.max()].item()) == qmax


@pytest.mark.clause("P23.6", "P23.2")
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_each_channel_gets_its_own_scale(axis):
    x = seeded(3, 4, seed=3)
    x = x * tensor([1e-3, 1.0, 50.0, 4.0]) if axis != 0 else x * tensor([[1e-3], [1.0], [50.0]])
    _, scale, back = round_trip(x, axis)

    want = torch.tensor(loop_scales(x, axis), dtype=torch.float64)
    assert scale.shape == want.shape, f"{scale.numel()} scales for {want.numel()} channels"
    assert torch.allclose(scale, want, rtol=1e-5), f"scales {scale.tolist()}, want {want.tolist()}"
    assert_within_half_a_step(x, axis % x.dim(), scale, back)


@pytest.mark.clause("P23.7")
def test_an_all_zero_tensor_has_a_defined_scale_and_comes_back_zero():
    x = torch.zeros(3, 4, device=test_device())
    _, scale, back = round_trip(x)
    assert bool(torch.isfinite(scale).all() & (scale > 0).all()), f"scale {scale.tolist()}"
    assert torch.equal(back, torch.zeros_like(back)), "an all-zero tensor changed"


@pytest.mark.clause("P23.7")
def test_an_all_zero_channel_beside_others_comes_back_zero():
    x = seeded(3, 4, seed=4)
    x[:, 2] = 0.0
    # the oracle first: the call's writes cannot reach it
    x_given = x.clone()
    _, scale, back = round_trip(x, 1)
    assert bool(torch.isfinite(scale).all() & (scale > 0).all()), f"scales {scale.tolist()}"
    assert bool((back[:, 2] == 0).all()), "the all-zero channel changed"
    assert_within_half_a_step(x_given, 1, scale, back)


@pytest.mark.clause("P23.4")
@pytest.mark.parametrize("axis", [None, 0], ids=["per tensor", "per channel"])
def test_the_top_value_clamps_to_the_last_level_instead_of_wrapping(axis):
    # scale is exactly 1 and the zero point 2: 253.5 rounds to 254, plus 2 is one past the top.
    tie = tensor([[-1.5, 0.0, 100.0, 253.5]])
    x = tie if axis is None else torch.cat([seeded(1, 4, seed=10), tie])
    q, scale, back = round_trip(x, axis)
    assert int(q[-1, -1]) == LEVELS[q.dtype][1], f"the top value quantized to {int(q[-1, -1])}"
    assert_within_half_a_step(x, axis, scale, back)


@pytest.mark.clause("P23.2", "P23.4", "P23.6")
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_any_tensor_and_axis_round_trip_within_half_a_step(data):
    shape = data.draw(st.lists(st.integers(1, 4), min_size=1, max_size=3), label="shape")
    axis = data.draw(st.sampled_from([None, *range(-len(shape), len(shape))]), label="axis")
    spread = data.draw(st.sampled_from([1e-3, 1.0, 1e3]), label="spread")
    offset = data.draw(st.sampled_from([0.0, 5.0, -5.0]), label="offset")
    x = (seeded(*shape, seed=data.draw(st.integers(0, 2**16))) + offset) * spread
    x_given = x.clone()  # before the call: the call's writes cannot reach it

    _, scale, back = round_trip(x, axis)

    assert_within_half_a_step(x_given, None if axis is None else axis % x.dim(), scale, back)
    assert bool((back[x_given == 0] == 0).all())


@pytest.mark.clause("P23.3")
def test_half_precision_input_is_accepted():
    x = seeded(2, 8, seed=5, dtype=torch.bfloat16)
    # the oracle first: the call's writes cannot reach it
    x_given = x.clone()
    _, scale, back = round_trip(x)
    assert_within_half_a_step(x_given.float(), None, scale, back)


@pytest.mark.clause("P23.11")
def test_inputs_are_only_read():
    x = seeded(3, 4, seed=6)
    with inputs_untouched(x=x):
        q, scale, zero_point = drill.quantize_affine(x, 1)
    with inputs_untouched(
        q=q, scale=torch.as_tensor(scale), zero_point=torch.as_tensor(zero_point)
    ):
        drill.dequantize_affine(q, scale, zero_point, 1)


# ---- rejection ----


@pytest.mark.clause("P23.1", "P23.3")
def test_positional_per_tensor_calls_give_float32_back():
    x = seeded(2, 5, seed=13, dtype=torch.float16)
    # the oracle first: the call's writes cannot reach it
    x_given = x.clone()
    try:
        q, scale, zero_point = drill.quantize_affine(x)
        back = drill.dequantize_affine(q, scale, zero_point)
    except TypeError as error:  # a signature mismatch
        raise AssertionError(f"quantize_affine(x) / dequantize_affine(q, s, z): {error}") from error
    assert q.dtype in LEVELS, f"q must be uint8 or int8, got {q.dtype}"
    assert back.dtype == torch.float32, f"dequantize_affine returned {back.dtype}"
    assert_within_half_a_step(x_given.float(), None, params(scale), back.double())


@pytest.mark.clause("P23.1")
def test_positional_per_channel_calls_take_axis_last():
    x = seeded(3, 4, seed=14)
    try:
        q, scale, zero_point = drill.quantize_affine(x, 1)
        back = drill.dequantize_affine(q, scale, zero_point, 1)
    except (TypeError, ValueError, RuntimeError) as error:  # a signature mismatch
        raise AssertionError(f"dequantize_affine(q, scale, zero_point, axis): {error}") from error
    assert_within_half_a_step(x, 1, params(scale), back.double())


@pytest.mark.clause("P23.6")
def test_a_one_dimensional_input_per_channel_gives_each_element_its_own_scale():
    x = tensor([0.5, -2.0, 3.0, 0.0, -0.25])

    # the oracle first: the call's writes cannot reach it
    x_given = x.clone()
    expected = loop_scales(x, 0)
    _, scale, back = round_trip(x, 0)

    want = torch.tensor([s for s in expected], dtype=torch.float64)
    want = torch.where(want > 0, want, torch.ones_like(want))  # the all-zero channel: 1.0
    assert torch.allclose(scale.cpu(), want, rtol=1e-5), f"scales {scale.tolist()}"
    assert_within_half_a_step(x_given, 0, scale, back)
