"""PT36 column_parallel_linear(x, weight, bias, world_size, gather=True): output rows sharded.

Simulated ranks: the candidate returns every rank's local output (gather=False) or their
concatenation (gather=True); the oracle is F.linear in float64 on the whole weight, and for
rank r the same on weight's row block r (and bias's slice r).
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from gptlab_testkit import BAD_VALUE, assert_rejects, candidate
from gptlab_testkit.oracles import assert_binds, inputs_untouched, seeded

drill = candidate("DRILL_PT36_MODULE")

pytestmark = [pytest.mark.owner("pt36"), pytest.mark.contract]

TOL = {"rtol": 1e-5, "atol": 1e-5}


def oracle(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    """F.linear in float64 (the whole, unsharded layer)."""
    return F.linear(x.double(), weight.double(), None if bias is None else bias.double())


def rank_block(weight, bias, world_size: int, rank: int):
    rows = weight.shape[0] // world_size
    block = slice(rank * rows, (rank + 1) * rows)
    return weight[block], None if bias is None else bias[block]


def layer(out_features: int, in_features: int, seed: int, with_bias: bool = True):
    weight = seeded(out_features, in_features, seed=seed)
    bias = seeded(out_features, seed=seed + 1) if with_bias else None
    return weight, bias


def check_gathered(x, weight, bias, world_size: int, what: str) -> None:
    # the oracle first: the call's writes cannot reach it
    want = oracle(x, weight, bias)
    got = drill.column_parallel_linear(x, weight, bias, world_size)
    assert isinstance(got, torch.Tensor), f"{what}: gather=True returned {type(got).__name__}"
    assert got.shape == want.shape, f"{what}: shape {tuple(got.shape)}, want {tuple(want.shape)}"
    assert got.dtype == x.dtype, f"{what}: dtype {got.dtype}, x is {x.dtype}"
    assert torch.allclose(got.double(), want, **TOL), f"{what}: differs from F.linear"


def check_local(x, weight, bias, world_size: int, what: str) -> list[torch.Tensor]:
    # the oracle first: the call's writes cannot reach it
    wants = [oracle(x, *rank_block(weight, bias, world_size, r)) for r in range(world_size)]
    local = drill.column_parallel_linear(x, weight, bias, world_size, gather=False)
    assert isinstance(local, (list, tuple)), f"{what}: gather=False gave {type(local).__name__}"
    assert len(local) == world_size, f"{what}: {len(local)} local outputs for {world_size} ranks"
    for rank, (got, want) in enumerate(zip(local, wants, strict=True)):
        assert got.shape == want.shape, f"{what}: rank {rank} shape {tuple(got.shape)}"
        assert torch.allclose(got.double(), want, **TOL), (
            f"{what}: rank {rank}'s output is not F.linear on its own rows of weight and bias"
        )
    return list(local)


@pytest.mark.clause("PT36.2", "PT36.4")
@pytest.mark.parametrize("world_size", [1, 2, 4, 8])
def test_the_gathered_output_is_the_whole_linear(world_size):
    x = seeded(3, 5, 6, seed=1)
    check_gathered(x, *layer(16, 6, seed=2), world_size, f"R={world_size}")


@pytest.mark.clause("PT36.4")
@pytest.mark.parametrize("world_size", [1, 4])
def test_without_a_bias_the_gathered_output_is_the_plain_product(world_size):
    x = seeded(4, 6, seed=3)
    check_gathered(x, *layer(8, 6, seed=4, with_bias=False), world_size, "bias None")


@pytest.mark.clause("PT36.2", "PT36.5")
@pytest.mark.parametrize("world_size", [1, 2, 4, 6])
def test_each_rank_holds_its_own_rows_and_its_own_bias_slice(world_size):
    x = seeded(2, 3, 5, seed=5)
    check_local(x, *layer(12, 5, seed=6), world_size, f"R={world_size}")


@pytest.mark.clause("PT36.5")
def test_each_rank_without_a_bias():
    x = seeded(4, 5, seed=7)
    check_local(x, *layer(8, 5, seed=8, with_bias=False), 4, "bias None, R=4")


@pytest.mark.clause("PT36.6")
@pytest.mark.parametrize("world_size", [2, 4])
def test_gathering_the_local_outputs_in_rank_order_is_the_gathered_output(world_size):
    x = seeded(3, 4, seed=9)
    weight, bias = layer(8, 4, seed=10)
    # the oracle first: the call's writes cannot reach it
    want = oracle(x, weight, bias)
    local = drill.column_parallel_linear(x, weight, bias, world_size, gather=False)
    gathered = drill.column_parallel_linear(x, weight, bias, world_size, gather=True)
    assert torch.equal(torch.cat(list(local), dim=-1), gathered), "gather is not cat(local, -1)"
    assert torch.allclose(gathered.double(), want, **TOL)


@pytest.mark.clause("PT36.2", "PT36.4")
@pytest.mark.parametrize("shape", [(5,), (0, 5), (2, 0, 5), (2, 1, 3, 5)], ids=str)
def test_any_number_of_leading_dims(shape):
    x = seeded(*shape, seed=11)
    check_gathered(x, *layer(8, 5, seed=12), 4, f"x {shape}")


@pytest.mark.clause("PT36.3")
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
def test_the_output_keeps_xs_dtype(dtype):
    x = seeded(3, 4, seed=13, dtype=dtype)
    weight, bias = (t.to(dtype) for t in layer(8, 4, seed=14))
    for got in [drill.column_parallel_linear(x, weight, bias, 2),
                *drill.column_parallel_linear(x, weight, bias, 2, gather=False)]:  # fmt: skip
        assert got.dtype == dtype, f"{got.dtype}, x is {dtype}"


@pytest.mark.clause("PT36.4", "PT36.5")
def test_a_noncontiguous_weight_and_x_are_read_by_their_logical_layout():
    def strided_inputs():
        """Fresh for each call, so one call's writes cannot reach the next check."""
        x = seeded(5, 3, seed=15).t()  # [3, 5], transposed
        weight = seeded(5, 8, seed=16).t()  # [8, 5], transposed
        bias = seeded(16, seed=17)[::2]  # [8], stride 2
        return x, weight, bias

    check_gathered(*strided_inputs(), 4, "transposed x and weight, strided bias")
    check_local(*strided_inputs(), 4, "transposed x and weight, strided bias")


@pytest.mark.clause("PT36.4", "PT36.5")
@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_any_small_layer_on_any_rank_count(data):
    world_size = data.draw(st.integers(1, 6), label="R")
    rows = data.draw(st.integers(1, 3), label="O/R")
    in_features = data.draw(st.integers(1, 5), label="I")
    seed = data.draw(st.integers(0, 2**16), label="seed")
    with_bias = data.draw(st.booleans(), label="bias")

    def fresh_inputs():
        """Fresh for each call, so one call's writes cannot reach the next check."""
        x = seeded(2, in_features, seed=seed)
        return (x, *layer(world_size * rows, in_features, seed + 1, with_bias))

    check_gathered(*fresh_inputs(), world_size, f"R={world_size}")
    check_local(*fresh_inputs(), world_size, f"R={world_size}")


@pytest.mark.clause("PT36.8")
@pytest.mark.parametrize("gather", [True, False])
def test_x_weight_and_bias_are_only_read(gather):
    x = seeded(3, 4, seed=18)
    weight, bias = layer(8, 4, seed=19)
    with inputs_untouched(x=x, weight=weight, bias=bias):
        drill.column_parallel_linear(x, weight, bias, 4, gather=gather)


@pytest.mark.clause("PT36.1")
def test_the_arguments_bind_by_name_in_this_projects_order():
    x = seeded(2, 4, seed=20)
    weight, bias = layer(4, 4, seed=21)
    assert_binds(drill.column_parallel_linear, x, weight, bias, 2)
    assert_binds(drill.column_parallel_linear, x, weight, bias, 2, False)
    assert_binds(drill.column_parallel_linear, gather=True, world_size=2, bias=bias,
                 weight=weight, x=x)  # fmt: skip
    want = oracle(x, weight, bias)  # before the call: its writes cannot reach it
    by_name = drill.column_parallel_linear(world_size=2, bias=bias, weight=weight, x=x)
    assert torch.allclose(by_name.double(), want, **TOL), "called by name"


# ---- rejection: valid in every respect but one, before any work ----


@pytest.mark.clause("PT36.7")
@pytest.mark.parametrize(("out_features", "world_size"), [(6, 4), (10, 3), (3, 8)])
@pytest.mark.parametrize("gather", [True, False])
def test_output_features_that_do_not_split_over_the_ranks_are_rejected(
    out_features, world_size, gather
):
    x = seeded(2, 4, seed=22)
    weight, bias = layer(out_features, 4, seed=23)
    with inputs_untouched(x=x, weight=weight, bias=bias):
        assert_rejects(
            lambda: drill.column_parallel_linear(x, weight, bias, world_size, gather=gather),
            BAD_VALUE,
            ("world_size", "weight"),
            values=[out_features, world_size],
        )
