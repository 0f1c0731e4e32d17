"""RMSNorm at its checkpoint paths: the formula, a float32 reduction, the input dtype out."""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import assert_close, test_device

pytestmark = [pytest.mark.contract, pytest.mark.owner("modern_rmsnorm")]

NORM_PATHS = (
    "model.layers.0.input_layernorm",
    "model.layers.0.post_attention_layernorm",
    "model.layers.1.input_layernorm",
    "model.layers.1.post_attention_layernorm",
    "model.norm",
)


def activations(shape: tuple[int, ...], scale: float, seed: int, dtype=torch.float32):
    generator = torch.Generator().manual_seed(seed)
    return (torch.randn(shape, generator=generator) * scale).to(test_device(), dtype)


@pytest.mark.clause("M02.18")
def test_every_norm_path_computes_rms_norm_with_its_own_gain(m02):
    config = m02.config()
    state = m02.random_state(config, seed=1)
    model = m02.loaded(config, state)
    x = activations((2, 5, config.hidden_size), 3.0, seed=2)
    for path in NORM_PATHS:
        expected = m02.rms_norm(x, state[f"{path}.weight"], config.rms_norm_eps)
        assert_close(model.get_submodule(path)(x), expected, path)


@pytest.mark.clause("M02.19")
@pytest.mark.parametrize("path", ["model.layers.0.input_layernorm", "model.norm"])
def test_float16_activations_too_large_to_square_in_float16(m02, path):
    """300^2 overflows float16 (max 65504): only a float32 reduction normalizes them."""
    config = m02.config()
    state = m02.random_state(config, seed=3)
    model = m02.loaded(config, state).to(torch.float16)
    x = activations((2, 4, config.hidden_size), 300.0, seed=4, dtype=torch.float16)
    out = model.get_submodule(path)(x)
    assert out.dtype == torch.float16, path
    expected = m02.rms_norm(x, state[f"{path}.weight"].half(), config.rms_norm_eps)
    assert_close(out.float(), expected.float(), path, atol=2e-2, rtol=2e-2)


@pytest.mark.clause("M02.19")
def test_float16_activations_too_small_to_square_in_float16(m02):
    """(1e-4)^2 underflows float16 to zero: the norm then divides by sqrt(eps) alone."""
    config = m02.config(rms_norm_eps=1e-12)
    state = m02.random_state(config, seed=5)
    model = m02.loaded(config, state).to(torch.float16)
    x = activations((2, 4, config.hidden_size), 1e-4, seed=6, dtype=torch.float16)
    out = model.get_submodule("model.norm")(x)
    assert out.dtype == torch.float16
    expected = m02.rms_norm(x, state["model.norm.weight"].half(), config.rms_norm_eps)
    assert_close(out.float(), expected.float(), "model.norm", atol=2e-2, rtol=2e-2)


@pytest.mark.clause("M02.19")
def test_bfloat16_in_bfloat16_out(m02):
    config = m02.config()
    state = m02.random_state(config, seed=7)
    model = m02.loaded(config, state).to(torch.bfloat16)
    x = activations((3, 2, config.hidden_size), 2.0, seed=8, dtype=torch.bfloat16)
    out = model.get_submodule("model.layers.1.post_attention_layernorm")(x)
    assert out.dtype == torch.bfloat16
    weight = state["model.layers.1.post_attention_layernorm.weight"].bfloat16()
    expected = m02.rms_norm(x, weight, config.rms_norm_eps)
    assert_close(out.float(), expected.float(), "bfloat16 norm", atol=3e-2, rtol=3e-2)
