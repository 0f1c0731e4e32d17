"""P19 extension: this project's rules beyond the kit's contract (tested apart, never scored)."""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import assert_rejects, candidate, test_device
from gptlab_testkit.boundary import BAD_VALUE, WRONG_KIND
from gptlab_testkit.oracles import (
    inputs_untouched,
    seeded,
)

drill = candidate("DRILL_P19_MODULE")

pytestmark = [pytest.mark.owner("p19"), pytest.mark.extension]


def long(values: list[int]) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.long, device=test_device())


def valid_call() -> dict[str, torch.Tensor]:
    return {
        "q": seeded(2, 4, 1, 4, seed=24),
        "k_cache": seeded(2, 2, 5, 4, seed=25),
        "v_cache": seeded(2, 2, 5, 4, seed=26),
        "lengths": long([5, 3]),
    }


@pytest.mark.clause("P19.7")
@pytest.mark.parametrize(
    ("argument", "bad_lengths"),
    [("zero valid slots in row 1", [5, 0]), ("past capacity in row 1", [5, 6])],
)
def test_a_length_outside_one_to_capacity_is_rejected(argument, bad_lengths):
    call = {**valid_call(), "lengths": long(bad_lengths)}
    with inputs_untouched(**call):
        assert_rejects(
            lambda: drill.decode_attention(**call), BAD_VALUE, "lengths", values=bad_lengths[1:]
        )


@pytest.mark.clause("P19.9")
def test_query_heads_not_a_multiple_of_kv_heads_are_rejected():
    call = {**valid_call(), "q": seeded(2, 3, 1, 4, seed=27)}
    with inputs_untouched(**call):
        assert_rejects(lambda: drill.decode_attention(**call), ValueError, ("q", "k_cache"))


@pytest.mark.clause("P19.10")
def test_more_than_one_query_token_is_rejected():
    call = {**valid_call(), "q": seeded(2, 4, 2, 4, seed=28)}
    with inputs_untouched(**call):
        assert_rejects(lambda: drill.decode_attention(**call), ValueError, "q")


@pytest.mark.clause("P19.11")
def test_key_and_value_caches_of_different_shapes_are_rejected():
    call = {**valid_call(), "v_cache": seeded(2, 2, 4, 4, seed=29)}
    with inputs_untouched(**call):
        assert_rejects(lambda: drill.decode_attention(**call), ValueError, ("v_cache", "k_cache"))


@pytest.mark.clause("P19.8")
def test_lengths_of_the_wrong_batch_size_are_rejected():
    call = {**valid_call(), "lengths": long([5, 3, 2])}
    with inputs_untouched(**call):
        assert_rejects(lambda: drill.decode_attention(**call), ValueError, "lengths")


@pytest.mark.clause("P19.8")
@pytest.mark.parametrize("dtype", [torch.bool, torch.float32], ids=str)
def test_lengths_of_a_non_integer_dtype_are_rejected(dtype):
    call = {**valid_call(), "lengths": long([5, 1]).to(dtype)}
    with inputs_untouched(**call):
        assert_rejects(lambda: drill.decode_attention(**call), WRONG_KIND, "lengths")


@pytest.mark.clause("P19.8")
def test_two_dimensional_lengths_are_rejected():
    call = {**valid_call(), "lengths": long([5, 3])[:, None]}
    with inputs_untouched(**call):
        assert_rejects(lambda: drill.decode_attention(**call), BAD_VALUE, "lengths")


@pytest.mark.clause("P19.11")
def test_caches_of_another_batch_size_than_q_are_rejected():
    call = valid_call()
    call = {**call, "k_cache": call["k_cache"][:1].clone(), "v_cache": call["v_cache"][:1].clone()}
    call["lengths"] = long([5, 3])
    with inputs_untouched(**call):
        assert_rejects(
            lambda: drill.decode_attention(**call), BAD_VALUE, ("k_cache", "v_cache", "q")
        )


@pytest.mark.clause("P19.12")
def test_a_cache_that_is_not_four_dimensional_is_rejected():
    call = valid_call()
    call["v_cache"] = call["v_cache"].reshape(2, 10, 4)
    call["k_cache"] = call["k_cache"].reshape(2, 10, 4)
    with inputs_untouched(**call):
        assert_rejects(lambda: drill.decode_attention(**call), WRONG_KIND, ("k_cache", "v_cache"))


@pytest.mark.clause("P19.12")
@pytest.mark.parametrize(
    ("name", "dtype"),
    [("v_cache", torch.int64), ("k_cache", torch.float64), ("q", torch.float64)],
    ids=["int v_cache", "f64 k_cache", "f64 q"],
)
def test_a_cache_of_an_integer_or_another_dtype_is_rejected(name, dtype):
    call = valid_call()
    call[name] = call[name].to(dtype)
    with inputs_untouched(**call):
        others = ("q", "k_cache") if name == "q" else (name, "q")
    assert_rejects(lambda: drill.decode_attention(**call), WRONG_KIND, others)


@pytest.mark.clause("P19.12")
@pytest.mark.parametrize("name", ["q", "k_cache", "v_cache", "lengths"])
def test_a_meta_tensor_is_rejected(name):
    call = valid_call()
    after = list(call)[list(call).index(name) :]  # `name` and every argument after it
    call = {key: value.to("meta") if key in after else value for key, value in call.items()}
    assert_rejects(lambda: drill.decode_attention(**call), BAD_VALUE, name)


@pytest.mark.clause("P19.12")
def test_a_query_that_is_not_four_dimensional_is_rejected():
    call = valid_call()
    call["q"] = call["q"][:, :, 0]
    with inputs_untouched(**call):
        assert_rejects(lambda: drill.decode_attention(**call), WRONG_KIND, "q")


@pytest.mark.clause("P19.8")
def test_lengths_given_as_a_list_are_rejected():
    call = {**valid_call(), "lengths": [5, 3]}
    assert_rejects(lambda: drill.decode_attention(**call), WRONG_KIND, "lengths")
