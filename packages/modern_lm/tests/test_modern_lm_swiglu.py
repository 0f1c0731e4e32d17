"""SwiGLU at its checkpoint paths: down(silu(gate(x)) * up(x)), bias-free."""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import assert_close, test_device

pytestmark = [pytest.mark.contract, pytest.mark.owner("modern_swiglu")]


@pytest.mark.clause("M02.20")
def test_every_mlp_path_computes_swiglu(m02):
    config = m02.config()
    state = m02.random_state(config, seed=1, scale=0.5)
    model = m02.loaded(config, state)
    generator = torch.Generator().manual_seed(2)
    x = torch.randn(2, 5, config.hidden_size, generator=generator).to(test_device())
    for index in range(config.num_hidden_layers):
        path = f"model.layers.{index}.mlp"
        expected = m02.swiglu(x, state, f"{path}.")
        assert_close(model.get_submodule(path)(x), expected, path)


@pytest.mark.clause("M02.20")
def test_silu_gates_the_up_branch_not_the_reverse(m02):
    """A strongly negative gate closes the MLP whatever the up branch says."""
    config = m02.config(intermediate_size=1)
    state = m02.random_state(config, seed=3)
    C = config.hidden_size
    state["model.layers.0.mlp.gate_proj.weight"] = torch.full((1, C), -4.0, device=test_device())
    state["model.layers.0.mlp.up_proj.weight"] = torch.full((1, C), 4.0, device=test_device())
    model = m02.loaded(config, state)
    x = torch.ones(1, 1, C, device=test_device())  # gate(x) = -4C: silu is ~0; up(x) = +4C
    out = model.get_submodule("model.layers.0.mlp")(x)
    assert_close(out, m02.swiglu(x, state, "model.layers.0.mlp."), "closed gate")
    assert out.abs().max() < 1e-6
