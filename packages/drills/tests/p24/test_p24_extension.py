"""P24 extension: this project's rules beyond the kit's contract (tested apart, never scored)."""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import assert_rejects, candidate, test_device
from gptlab_testkit.boundary import BAD_VALUE, WRONG_KIND
from gptlab_testkit.oracles import inputs_untouched, seeded

drill = candidate("DRILL_P24_MODULE")

pytestmark = [pytest.mark.owner("p24"), pytest.mark.extension]


def int8(rows: int, cols: int, seed: int) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    return torch.randint(-128, 128, (rows, cols), generator=generator, dtype=torch.int8).to(
        test_device()
    )


def scales_for(n: int, seed: int) -> torch.Tensor:
    return seeded(n, seed=seed).abs() * 0.05 + 1e-3


def valid_call() -> dict:
    return {"x": seeded(2, 4, seed=19), "weight": int8(3, 4, 20), "scales": scales_for(3, 21),
            "bias": seeded(3, seed=22)}  # fmt: skip


@pytest.mark.clause("P24.6", "P24.7")
@pytest.mark.parametrize(
    ("argument", "bad", "named"),
    [
        ("weight", lambda: seeded(3, 4, seed=23), "weight"),
        ("weight", lambda: int8(3, 5, 24), ("weight", "x")),
        ("scales", lambda: scales_for(4, 25), "scales"),
        ("bias", lambda: seeded(2, seed=26), "bias"),
        ("x", lambda: torch.ones(2, 4, dtype=torch.int64, device=test_device()), "x"),
    ],
    ids=["float weight", "in-features differ", "scales per input", "short bias", "integer x"],
)
def test_a_malformed_argument_is_rejected(argument, bad, named):
    call = {**valid_call(), argument: bad()}
    with inputs_untouched(**call):
        assert_rejects(lambda: drill.int8_linear(*call.values()), WRONG_KIND, named)


@pytest.mark.clause("P24.6")
@pytest.mark.parametrize(
    ("argument", "bad"),
    [
        ("weight", lambda: int8(3, 4, 27).to(torch.uint8)),
        ("scales", lambda: torch.ones(3, dtype=torch.int64, device=test_device())),
        ("bias", lambda: torch.ones(3, dtype=torch.int64, device=test_device())),
    ],
    ids=["uint8 weight", "integer scales", "integer bias"],
)
def test_a_tensor_of_the_wrong_dtype_is_rejected(argument, bad):
    call = {**valid_call(), argument: bad()}
    with inputs_untouched(**call):
        assert_rejects(lambda: drill.int8_linear(*call.values()), WRONG_KIND, argument)


@pytest.mark.clause("P24.8")
@pytest.mark.parametrize("bad", [float("nan"), float("inf")], ids=repr)
def test_a_scale_that_is_not_finite_is_rejected_on_channel_one(bad):
    call = valid_call()
    call["scales"][1] = bad
    with inputs_untouched(**call):
        assert_rejects(lambda: drill.int8_linear(*call.values()), BAD_VALUE, "scales")


@pytest.mark.clause("P24.8")
@pytest.mark.parametrize("name", ["x", "weight", "scales", "bias"])
def test_a_meta_tensor_is_rejected(name):
    call = valid_call()
    after = list(call)[list(call).index(name) :]  # `name` and every argument after it
    call = {key: value.to("meta") if key in after else value for key, value in call.items()}
    assert_rejects(lambda: drill.int8_linear(*call.values()), BAD_VALUE, name)


@pytest.mark.clause("P24.7")
@pytest.mark.parametrize("argument", ["x", "weight"])
def test_an_argument_that_is_not_two_dimensional_is_rejected(argument):
    call = valid_call()
    call[argument] = call[argument][None]
    with inputs_untouched(**call):
        assert_rejects(lambda: drill.int8_linear(*call.values()), WRONG_KIND, argument)


@pytest.mark.clause("P24.6")
def test_an_input_that_is_not_a_tensor_is_rejected():
    call = valid_call()
    call["x"] = call["x"].tolist()
    assert_rejects(lambda: drill.int8_linear(*call.values()), WRONG_KIND, "x")
