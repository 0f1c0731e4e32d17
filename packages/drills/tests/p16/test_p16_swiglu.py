"""P16 SwiGLU(dim, hidden_dim): down(silu(gate) * up) with a fused gate-up projection."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from gptlab_testkit import (
    assert_close,
    candidate,
    shares_storage,
    test_device,
)
from gptlab_testkit.objects import assert_instance
from gptlab_testkit.oracles import assert_binds, inputs_untouched, seeded

drill = candidate("DRILL_P16_MODULE")

pytestmark = [pytest.mark.owner("p16"), pytest.mark.contract]

KEYS = {"gate_up_proj.weight", "down_proj.weight"}


def build(dim: int, hidden: int, seed: int):
    """A SwiGLU whose weights come from `seeded` (set through the state dict)."""
    mlp = drill.SwiGLU(dim, hidden).to(test_device())
    mlp.load_state_dict(
        {"gate_up_proj.weight": seeded(2 * hidden, dim, seed=seed) / math.sqrt(dim),
         "down_proj.weight": seeded(dim, hidden, seed=seed + 1) / math.sqrt(hidden)},
        strict=True,
    )  # fmt: skip
    return mlp


def loop_swiglu(x: torch.Tensor, gate_up: torch.Tensor, down: torch.Tensor) -> torch.Tensor:
    """Token by token in float64: rows 0..H-1 of gate_up are the gate, rows H..2H-1 the up."""
    H, C = down.shape[1], down.shape[0]
    Wg, Wu, Wd = (
        gate_up[:H].double().tolist(),
        gate_up[H:].double().tolist(),
        down.double().tolist(),
    )
    out = []
    for v in x.double().reshape(-1, C).tolist():
        g = [sum(a * b for a, b in zip(row, v, strict=True)) for row in Wg]
        u = [sum(a * b for a, b in zip(row, v, strict=True)) for row in Wu]
        h = [gi / (1 + math.exp(-gi)) * ui for gi, ui in zip(g, u, strict=True)]
        out.append([sum(a * b for a, b in zip(row, h, strict=True)) for row in Wd])
    return torch.tensor(out, dtype=torch.float64).reshape(x.shape).to(x.device)


def oracle(mlp, x):
    state = mlp.state_dict()
    return loop_swiglu(x, state["gate_up_proj.weight"], state["down_proj.weight"])


@pytest.mark.clause("P16.3")
def test_the_parameters_are_two_bias_free_projections_of_the_stated_shapes():
    mlp = drill.SwiGLU(6, 10)

    shapes = {name: tuple(t.shape) for name, t in mlp.state_dict().items()}

    assert shapes == {"gate_up_proj.weight": (20, 6), "down_proj.weight": (6, 10)}
    assert sum(p.numel() for p in mlp.parameters()) == 20 * 6 + 6 * 10


@pytest.mark.clause("P16.2", "P16.5")
@settings(max_examples=15, deadline=None)
@given(
    leading=st.lists(st.integers(1, 3), min_size=1, max_size=3),
    dim=st.integers(1, 6),
    hidden=st.integers(1, 6),
    seed=st.integers(0, 2**16),
)
def test_any_leading_dims_match_the_loop_oracle(leading, dim, hidden, seed):
    mlp = build(dim, hidden, seed)
    x = seeded(*leading, dim, seed=seed + 2)

    got = mlp(x)

    assert got.shape == x.shape
    assert_close(got.double(), oracle(mlp, x), "SwiGLU vs loop oracle")


@pytest.mark.clause("P16.5")
def test_the_first_half_of_the_fused_projection_is_the_gate():
    # Rows 0..H-1 drive the gate to -40 for this x: silu(-40) ~ 0 closes the MLP, whatever the
    # up rows hold. Read the other way round, silu(up) * -40 is far from zero.
    mlp = build(4, 3, seed=1)
    with torch.no_grad():
        mlp.state_dict()["gate_up_proj.weight"][:3] = -10.0
    x = torch.ones(2, 4, device=test_device())

    got = mlp(x)

    assert_close(got, torch.zeros_like(x), "output with the gate driven to -40", atol=1e-6)
    assert_close(got.double(), oracle(mlp, x), "SwiGLU vs loop oracle")


@pytest.mark.clause("P16.6")
def test_the_split_is_on_the_feature_dim_so_tokens_stay_independent():
    mlp = build(4, 5, seed=3)
    x = seeded(2, 6, 4, seed=4)

    whole = mlp(x)

    for b in range(2):
        for t in range(6):
            alone = mlp(x[b, t].reshape(1, 1, 4))
            assert_close(whole[b, t], alone.reshape(4), f"token ({b}, {t}) alone vs in the batch")


@pytest.mark.clause("P16.3", "P16.7")
def test_a_strict_state_dict_round_trip_keeps_the_output():
    source, target = build(5, 7, seed=5), drill.SwiGLU(5, 7).to(test_device())
    x = seeded(3, 5, seed=6)

    target.load_state_dict(source.state_dict(), strict=True)

    assert set(target.state_dict()) == KEYS
    assert torch.equal(target(x), source(x))


@pytest.mark.clause("P16.4", "P16.7")
@pytest.mark.parametrize("dtype", [torch.float64, torch.bfloat16])
def test_a_dtype_move_reaches_every_parameter(dtype):
    mlp = build(4, 6, seed=7).to(dtype)
    x = seeded(3, 4, seed=8).to(dtype)

    assert {p.dtype for p in mlp.parameters()} == {dtype}
    got = mlp(x)
    assert got.dtype == dtype
    tolerance = {} if dtype == torch.float64 else {"atol": 5e-2, "rtol": 5e-2}
    assert_close(got.double(), oracle(mlp, x), f"{dtype} SwiGLU", **tolerance)


@pytest.mark.clause("P16.7")
def test_every_parameter_receives_a_gradient():
    mlp = build(4, 3, seed=9)

    mlp(seeded(5, 4, seed=10)).square().sum().backward()

    for name, p in mlp.named_parameters():
        assert p.grad is not None and bool(p.grad.abs().sum() > 0), f"{name} got no gradient"


@pytest.mark.clause("P16.8")
def test_the_input_is_not_written():
    mlp, x = build(4, 3, seed=11), seeded(2, 4, seed=12)

    with inputs_untouched(x=x):
        mlp(x)


# ---- rejection: valid in every respect but one ----


@pytest.mark.clause("P16.1")
def test_the_constructor_takes_both_sizes_positionally():
    assert_binds(drill.SwiGLU, 4, 3)
    mlp = drill.SwiGLU(4, 3)

    assert_instance(mlp, torch.nn.Module, "the SwiGLU block")
    assert tuple(mlp.state_dict()["down_proj.weight"].shape) == (4, 3)


@pytest.mark.clause("P16.2", "P16.5")
@pytest.mark.parametrize("shape", [(5,), (2, 3, 1, 5)], ids=str)
def test_no_or_many_leading_dims_match_the_loop_oracle(shape):
    mlp = build(5, 4, seed=20)
    x = seeded(*shape, seed=21)

    got = mlp(x)

    assert got.shape == x.shape
    assert_close(got.double(), oracle(mlp, x), f"SwiGLU of {shape}")


@pytest.mark.clause("P16.4")
def test_an_fp32_module_returns_fp32():
    mlp = build(4, 6, seed=22)

    assert mlp(seeded(3, 4, seed=23)).dtype == torch.float32


@pytest.mark.clause("P16.5")
def test_the_up_half_multiplies_the_gate_unactivated():
    # Up rows driven to -10 per unit input: silu(gate) * up is negative wherever the gate
    # opens; silu applied to the up instead (or no silu) gives another output.
    mlp = build(3, 2, seed=24)
    with torch.no_grad():
        weight = mlp.state_dict()["gate_up_proj.weight"]
        weight[:2] = 1.0
        weight[2:] = -10.0
    x = torch.ones(1, 3, device=test_device())

    got = mlp(x)

    assert_close(got.double(), oracle(mlp, x), "SwiGLU with fixed gate and up rows")


@pytest.mark.clause("P16.8")
def test_the_output_is_a_new_tensor():
    mlp, x = build(4, 4, seed=25), seeded(2, 4, seed=26)

    assert not shares_storage(mlp(x), x)
