"""PT37 row_parallel_linear(x, weight, bias, world_size): input features sharded, partials summed.

Simulated ranks: x comes replicated (one tensor, each rank takes its features) or
pre-sharded (a list of R feature blocks); the oracle is F.linear in float64 on the whole
layer. The bias must count once: added on every rank before the sum it counts R times.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from gptlab_testkit import candidate
from gptlab_testkit.oracles import assert_binds, inputs_untouched, seeded

drill = candidate("DRILL_PT37_MODULE")

pytestmark = [pytest.mark.owner("pt37"), pytest.mark.contract]

TOL = {"rtol": 1e-5, "atol": 1e-5}


def oracle(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    """F.linear in float64 (the whole, unsharded layer)."""
    return F.linear(x.double(), weight.double(), None if bias is None else bias.double())


def feature_blocks(x: torch.Tensor, world_size: int) -> list[torch.Tensor]:
    """Rank r's features of x, r*I/R..(r+1)*I/R: what a pre-sharded input holds."""
    width = x.shape[-1] // world_size
    return [x[..., r * width : (r + 1) * width] for r in range(world_size)]


def layer(out_features: int, in_features: int, seed: int, with_bias: bool = True):
    weight = seeded(out_features, in_features, seed=seed)
    bias = seeded(out_features, seed=seed + 1) + 3.0 if with_bias else None  # far from 0
    return weight, bias


def check(x_given, x_whole, weight, bias, world_size: int, what: str) -> torch.Tensor:
    # the oracle first: the call's writes cannot reach it
    want = oracle(x_whole, weight, bias)
    every_rank = None if bias is None else want + (world_size - 1) * bias.double()
    got = drill.row_parallel_linear(x_given, weight, bias, world_size)
    assert isinstance(got, torch.Tensor), f"{what}: returned {type(got).__name__}"
    assert got.shape == want.shape, f"{what}: shape {tuple(got.shape)}, want {tuple(want.shape)}"
    assert got.dtype == x_whole.dtype, f"{what}: dtype {got.dtype}, x is {x_whole.dtype}"
    if every_rank is not None and world_size > 1 and want.numel():
        assert not torch.allclose(got.double(), every_rank, **TOL), (
            f"{what}: the bias was added on all {world_size} ranks before the sum"
        )
    assert torch.allclose(got.double(), want, **TOL), f"{what}: differs from F.linear"
    return got


@pytest.mark.clause("PT37.2", "PT37.4")
@pytest.mark.parametrize("world_size", [1, 2, 4, 8])
def test_a_replicated_x_gives_the_whole_linear(world_size):
    x = seeded(3, 5, 8, seed=1)
    check(x, x, *layer(6, 8, seed=2), world_size, f"replicated x, R={world_size}")


@pytest.mark.clause("PT37.2", "PT37.5")
@pytest.mark.parametrize("world_size", [1, 2, 4, 8])
def test_a_pre_sharded_x_gives_the_whole_linear(world_size):
    x = seeded(3, 5, 8, seed=3)
    check(feature_blocks(x, world_size), x, *layer(6, 8, seed=4), world_size,
          f"pre-sharded x, R={world_size}")  # fmt: skip


@pytest.mark.clause("PT37.5")
def test_pre_sharded_blocks_are_read_in_rank_order():
    x = seeded(4, 6, seed=5)
    weight, bias = layer(5, 6, seed=6)
    blocks = feature_blocks(x, 3)
    swapped = torch.cat([blocks[1], blocks[0], blocks[2]], dim=-1)  # what rank order changes
    assert not torch.allclose(oracle(swapped, weight, bias), oracle(x, weight, bias), **TOL)
    check(blocks, x, weight, bias, 3, "R=3, blocks of distinct features")


@pytest.mark.clause("PT37.6")
@pytest.mark.parametrize("world_size", [2, 3, 4])
@pytest.mark.parametrize("form", ["replicated", "pre-sharded"])
def test_the_bias_counts_once_however_many_ranks(world_size, form):
    x = seeded(2, 3, 12, seed=7)
    weight, bias = layer(4, 12, seed=8)
    given_x = x if form == "replicated" else feature_blocks(x, world_size)
    check(given_x, x, weight, bias, world_size, f"{form} x, R={world_size}, bias near 3")


@pytest.mark.clause("PT37.4", "PT37.5")
@pytest.mark.parametrize("form", ["replicated", "pre-sharded"])
def test_without_a_bias_the_output_is_the_summed_product(form):
    x = seeded(4, 8, seed=9)
    given_x = x if form == "replicated" else feature_blocks(x, 4)
    check(given_x, x, *layer(3, 8, seed=10, with_bias=False), 4, f"{form} x, bias None")


@pytest.mark.clause("PT37.2", "PT37.4", "PT37.5")
@pytest.mark.parametrize("shape", [(8,), (0, 8), (2, 0, 8), (2, 1, 3, 8)], ids=str)
def test_any_number_of_leading_dims(shape):
    x = seeded(*shape, seed=11)
    weight, bias = layer(5, 8, seed=12)
    check(x, x, weight, bias, 4, f"replicated x {shape}")
    check(feature_blocks(x, 2), x, weight, bias, 2, f"pre-sharded x {shape}")


@pytest.mark.clause("PT37.3")
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
@pytest.mark.parametrize("form", ["replicated", "pre-sharded"])
def test_the_output_keeps_xs_dtype(dtype, form):
    x = seeded(3, 4, seed=13, dtype=dtype)
    weight, bias = (t.to(dtype) for t in layer(5, 4, seed=14))
    given_x = x if form == "replicated" else feature_blocks(x, 2)
    got = drill.row_parallel_linear(given_x, weight, bias, 2)
    assert got.dtype == dtype, f"{got.dtype}, x is {dtype}"


@pytest.mark.clause("PT37.4", "PT37.5")
def test_noncontiguous_inputs_are_read_by_their_logical_layout():
    x = seeded(8, 3, seed=15).t()  # [3, 8], transposed
    weight = seeded(8, 5, seed=16).t()  # [5, 8], transposed
    bias = seeded(10, seed=17)[::2]  # [5], stride 2
    check(x, x, weight, bias, 4, "transposed x and weight, strided bias")
    check([b.t().contiguous().t() for b in feature_blocks(x, 2)], x, weight, bias, 2,
          "column-major shards")  # fmt: skip


@pytest.mark.clause("PT37.4", "PT37.5", "PT37.6")
@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_any_small_layer_on_any_rank_count(data):
    world_size = data.draw(st.integers(1, 6), label="R")
    width = data.draw(st.integers(1, 3), label="I/R")
    out_features = data.draw(st.integers(1, 5), label="O")
    seed = data.draw(st.integers(0, 2**16), label="seed")
    with_bias = data.draw(st.booleans(), label="bias")
    x = seeded(2, world_size * width, seed=seed)
    weight, bias = layer(out_features, world_size * width, seed + 1, with_bias)
    check(x, x, weight, bias, world_size, f"replicated x, R={world_size}")
    check(
        feature_blocks(x, world_size), x, weight, bias, world_size, f"pre-sharded, R={world_size}"
    )


@pytest.mark.clause("PT37.7")
@pytest.mark.parametrize("form", ["replicated", "pre-sharded"])
def test_x_weight_and_bias_are_only_read(form):
    x = seeded(3, 8, seed=18)
    weight, bias = layer(4, 8, seed=19)
    blocks = [b.clone() for b in feature_blocks(x, 4)]
    shards = {f"x shard {r}": b for r, b in enumerate(blocks)} if form == "pre-sharded" else {}
    with inputs_untouched(x=x, weight=weight, bias=bias, **shards):
        drill.row_parallel_linear(x if form == "replicated" else blocks, weight, bias, 4)


@pytest.mark.clause("PT37.1")
def test_the_arguments_bind_by_name_in_this_projects_order():
    x = seeded(2, 4, seed=20)
    weight, bias = layer(3, 4, seed=21)
    assert_binds(drill.row_parallel_linear, x, weight, bias, 2)
    assert_binds(drill.row_parallel_linear, world_size=2, bias=bias, weight=weight, x=x)
    want = oracle(x, weight, bias)  # before the call: its writes cannot reach it
    by_name = drill.row_parallel_linear(world_size=2, bias=bias, weight=weight, x=x)
    assert torch.allclose(by_name.double(), want, **TOL), "called by name"
