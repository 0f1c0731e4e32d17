"""P23 extension: this project's rules beyond the kit's contract (tested apart, never scored)."""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import assert_rejects, candidate, test_device
from gptlab_testkit.boundary import BAD_VALUE, WRONG_KIND
from gptlab_testkit.oracles import inputs_untouched, seeded

drill = candidate("DRILL_P23_MODULE")

pytestmark = [pytest.mark.owner("p23"), pytest.mark.extension]


def tensor(values) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.float32, device=test_device())


def quantized_rows() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    q, scale, zero_point = drill.quantize_affine(seeded(3, 4, seed=12), 0)
    return q, torch.as_tensor(scale), torch.as_tensor(zero_point)


@pytest.mark.clause("P23.8")
def test_an_integer_input_is_rejected():
    x = torch.arange(6, device=test_device()).reshape(2, 3)
    assert_rejects(lambda: drill.quantize_affine(x), WRONG_KIND, "x")


@pytest.mark.clause("P23.8")
@pytest.mark.parametrize("bad", [float("nan"), float("inf")], ids=["nan", "inf"])
def test_an_input_without_a_finite_range_is_rejected(bad):
    x = seeded(2, 3, seed=7)
    x[1, 2] = bad
    assert_rejects(lambda: drill.quantize_affine(x), ValueError, "x")


@pytest.mark.clause("P23.9")
@pytest.mark.parametrize("axis", [2, -3])
def test_an_axis_outside_the_input_is_rejected(axis):
    assert_rejects(lambda: drill.quantize_affine(seeded(2, 3, seed=8), axis), ValueError, "axis")


@pytest.mark.clause("P23.10")
def test_per_channel_scales_of_the_wrong_length_are_rejected():
    x = seeded(2, 3, seed=9)
    q, scale, zero_point = drill.quantize_affine(x, 1)
    short = torch.as_tensor(scale)[:2]
    assert_rejects(
        lambda: drill.dequantize_affine(q, short, zero_point, 1), ValueError, ("scale", "axis")
    )


@pytest.mark.clause("P23.8")
@pytest.mark.parametrize("kind", ["bool", "list", "empty", "meta"])
def test_an_input_of_another_kind_or_without_values_is_rejected(kind):
    x = {
        "bool": seeded(2, 3, seed=10) > 0,
        "list": [[0.5, -1.0]],
        "empty": seeded(0, 3, seed=10),
        "meta": torch.empty(2, 3, device="meta"),
    }[kind]
    errors = WRONG_KIND if kind in ("bool", "list") else BAD_VALUE
    assert_rejects(lambda: drill.quantize_affine(x), errors, "x")


@pytest.mark.clause("P23.9")
@pytest.mark.parametrize("axis", [True, 1.0], ids=repr)
def test_an_axis_that_is_not_an_int_is_rejected(axis):
    x = seeded(2, 3, seed=11)
    with inputs_untouched(x=x):
        assert_rejects(lambda: drill.quantize_affine(x, axis), WRONG_KIND, "axis")


@pytest.mark.clause("P23.10")
@pytest.mark.parametrize("bad", [0.0, float("nan"), float("inf"), -0.5], ids=repr)
def test_a_scale_that_is_not_positive_and_finite_is_rejected_on_row_one(bad):
    q, scale, zero_point = quantized_rows()
    scale = scale.clone()
    scale[1] = bad
    with inputs_untouched(q=q, scale=scale, zero_point=zero_point):
        assert_rejects(lambda: drill.dequantize_affine(q, scale, zero_point, 0), BAD_VALUE, "scale")


@pytest.mark.clause("P23.10")
@pytest.mark.parametrize("kind", ["float q", "bool q", "short zero_point"])
def test_a_floating_q_or_a_zero_point_of_the_wrong_length_is_rejected(kind):
    q, scale, zero_point = quantized_rows()
    if kind == "float q":
        q, names = q.float(), "q"
    elif kind == "bool q":
        q, names = q > 100, "q"
    else:
        zero_point, names = zero_point[:2].clone(), ("zero_point", "axis")
    with inputs_untouched(q=q, scale=scale, zero_point=zero_point):
        assert_rejects(lambda: drill.dequantize_affine(q, scale, zero_point, 0), WRONG_KIND, names)


@pytest.mark.clause("P23.9")
@pytest.mark.parametrize("axis", [2, -3])
def test_dequantize_with_an_axis_outside_q_is_rejected(axis):
    q, scale, zero_point = quantized_rows()
    with inputs_untouched(q=q, scale=scale, zero_point=zero_point):
        assert_rejects(
            lambda: drill.dequantize_affine(q, scale, zero_point, axis), BAD_VALUE, "axis"
        )


@pytest.mark.clause("P23.10")
@pytest.mark.parametrize("kind", ["a list", "meta"])
def test_a_scale_that_is_not_a_tensor_with_values_is_rejected(kind):
    q, scale, zero_point = quantized_rows()
    bad = scale.tolist() if kind == "a list" else scale.to("meta")
    with inputs_untouched(q=q, zero_point=zero_point):
        assert_rejects(lambda: drill.dequantize_affine(q, bad, zero_point, 0), WRONG_KIND, "scale")
