"""P11 extension: this project's rules beyond the kit's contract (tested apart, never scored)."""

from __future__ import annotations

import math

import pytest
import torch

from gptlab_testkit import (
    BAD_VALUE,
    WRONG_KIND,
    assert_rejects,
    candidate,
    test_device,
)
from gptlab_testkit.oracles import (
    drawn_tokens,
    inputs_untouched,
    seeded,
    seeded_generator,
)

drill = candidate("DRILL_P11_MODULE")

pytestmark = [pytest.mark.owner("p11"), pytest.mark.extension]


def sample(logits, **options) -> list[int]:
    return drawn_tokens(drill.sample_next_token(logits, **options), logits.shape[0])


def state(generator: torch.Generator) -> torch.Tensor:
    return generator.get_state().clone()


def sample_without_failing(logits, **options) -> list[int]:
    """`sample`, where the contract promises a draw: any error is the test's failure."""
    try:
        return sample(logits, **options)
    except Exception as error:
        raise AssertionError(
            f"valid input was not sampled: {type(error).__name__}: {error}"
        ) from error


def rejects_before_drawing(
    argument: str | tuple[str, ...],
    logits: torch.Tensor,
    errors=BAD_VALUE,
    values=(),
    **options,
) -> None:
    generator = options.pop("generator", None) or seeded_generator(23)
    before = state(generator)
    with inputs_untouched(logits=logits):
        assert_rejects(
            lambda: drill.sample_next_token(logits, generator=generator, **options),
            errors,
            argument,
            values=values,
        )
    assert torch.equal(state(generator), before), "a rejected call advanced the generator"


@pytest.mark.clause("P11.20", "P11.21")
def test_an_invalid_row_is_rejected_also_at_temperature_zero():
    logits = seeded(3, 6, seed=32)
    logits[2, 1] = math.nan

    rejects_before_drawing("logits", logits, temperature=0.0)


@pytest.mark.clause("P11.12", "P11.21")
@pytest.mark.parametrize("temperature", [-0.5, math.nan, math.inf])
def test_a_negative_or_non_finite_temperature_is_rejected(temperature):
    rejects_before_drawing(
        "temperature", seeded(3, 6, seed=12), values=(temperature,), temperature=temperature
    )


@pytest.mark.clause("P11.13", "P11.21")
@pytest.mark.parametrize("top_k", [-1, 7])
def test_a_top_k_outside_the_vocabulary_is_rejected(top_k):
    rejects_before_drawing(
        "top_k", seeded(3, 6, seed=13), values=(top_k,), temperature=1.0, top_k=top_k
    )


@pytest.mark.clause("P11.14", "P11.21")
@pytest.mark.parametrize("top_p", [0.0, -0.1, 1.5, math.nan])
def test_a_top_p_outside_zero_to_one_is_rejected(top_p):
    rejects_before_drawing(
        "top_p", seeded(3, 6, seed=14), values=(top_p,), temperature=1.0, top_p=top_p
    )


@pytest.mark.clause("P11.10", "P11.21")
def test_logits_that_are_not_a_batch_of_rows_are_rejected():
    rejects_before_drawing("logits", seeded(2, 3, 6, seed=15), temperature=1.0)


@pytest.mark.clause("P11.10", "P11.21")
@pytest.mark.parametrize("shape", [(6,), (0, 6), (3, 0)], ids=str)
def test_logits_of_another_shape_are_rejected(shape):
    logits = torch.zeros(shape, device=test_device())

    rejects_before_drawing("logits", logits, temperature=1.0)


@pytest.mark.clause("P11.10", "P11.21")
@pytest.mark.parametrize("dtype", [torch.int64, torch.bool, torch.complex64])
def test_logits_that_are_not_floating_are_rejected(dtype):
    logits = seeded(3, 6, seed=33).to(dtype)

    rejects_before_drawing("logits", logits, WRONG_KIND, temperature=1.0)


@pytest.mark.clause("P11.10")
def test_logits_that_are_not_a_tensor_are_rejected():
    generator = seeded_generator(34)
    before = state(generator)

    assert_rejects(
        lambda: drill.sample_next_token([[0.5, 1.0]], temperature=1.0, generator=generator),
        WRONG_KIND,
        "logits",
    )
    assert torch.equal(state(generator), before), "a rejected call advanced the generator"


@pytest.mark.clause("P11.12", "P11.21")
@pytest.mark.parametrize("temperature", [True, "1.0", None], ids=repr)
def test_a_temperature_of_another_kind_is_rejected(temperature):
    rejects_before_drawing(
        "temperature", seeded(3, 6, seed=35), WRONG_KIND, temperature=temperature
    )


@pytest.mark.clause("P11.13", "P11.21")
@pytest.mark.parametrize("top_k", [2.0, True], ids=repr)
def test_a_top_k_of_another_kind_is_rejected(top_k):
    rejects_before_drawing("top_k", seeded(3, 6, seed=36), WRONG_KIND, temperature=1.0, top_k=top_k)


@pytest.mark.clause("P11.14", "P11.21")
@pytest.mark.parametrize("top_p", [True, "0.5"], ids=repr)
def test_a_top_p_of_another_kind_is_rejected(top_p):
    rejects_before_drawing("top_p", seeded(3, 6, seed=37), WRONG_KIND, temperature=1.0, top_p=top_p)


@pytest.mark.clause("P11.15")
@pytest.mark.parametrize("generator", [None, 7], ids=repr)
def test_a_generator_of_another_kind_is_rejected(generator):
    logits = seeded(3, 6, seed=38)
    with inputs_untouched(logits=logits):
        assert_rejects(
            lambda: drill.sample_next_token(logits, temperature=1.0, generator=generator),
            WRONG_KIND,
            "generator",
        )


@pytest.mark.clause("P11.15", "P11.21")
def test_a_generator_on_another_device_than_the_logits_is_rejected():
    logits = torch.empty(3, 6, device="meta")  # no generator lives on meta

    rejects_before_drawing(("generator", "logits"), logits, temperature=1.0)


@pytest.mark.clause("P11.9")
def test_large_half_precision_logits_at_low_temperature_still_sample():
    logits = (seeded(4, 8, seed=9) * 1e4).to(torch.float16)  # finite; / 0.25 is not

    got = sample_without_failing(logits, temperature=0.25, generator=seeded_generator(21))

    assert got == logits.float().argmax(dim=-1).tolist()  # gaps of thousands: the max wins


@pytest.mark.clause("P11.9")
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_a_tiny_positive_temperature_draws_each_rows_maximum(dtype):
    logits = seeded(4, 9, seed=46, dtype=dtype)

    # x / 1e-45 overflows fp32 for any |x| > 1e-6: only a shifted (x - max) / T survives.
    got = sample_without_failing(logits, temperature=1e-45, generator=seeded_generator(47))

    assert got == logits.float().argmax(dim=-1).tolist()


@pytest.mark.clause("P11.13", "P11.14", "P11.21")
@pytest.mark.parametrize(
    ("argument", "value"),
    [("top_k", 7), ("top_k", -1), ("top_p", 0.0), ("top_p", 1.5), ("top_p", -0.1)],
    ids=str,
)
def test_a_bad_filter_is_rejected_also_at_temperature_zero(argument, value):
    options = {"temperature": 0.0, argument: value}
    rejects_before_drawing(argument, seeded(3, 6, seed=56), values=(value,), **options)


@pytest.mark.clause("P11.22", "P11.21")
@pytest.mark.parametrize("temperature", [1e-50, 1e-46, 5e-324], ids=repr)
def test_a_positive_temperature_that_is_zero_in_fp32_is_rejected(temperature):
    # fp32's smallest positive value is about 1.4e-45: these divide the logits by 0.
    rejects_before_drawing(
        "temperature", seeded(3, 6, seed=57), values=(temperature,), temperature=temperature
    )
