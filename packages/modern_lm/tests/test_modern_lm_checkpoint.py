"""Stable checkpoint paths: Llama's state-dict names and shapes, strict round trips."""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import assert_close
from gptlab_testkit.boundary import assert_rejects

pytestmark = [pytest.mark.contract, pytest.mark.owner("modern_checkpoint")]


@pytest.mark.clause("M02.12")
@pytest.mark.parametrize("tied", [False, True], ids=["untied", "tied"])
def test_state_dict_keys_are_the_llama_checkpoint_paths(m02, tied):
    config = m02.config(tie_word_embeddings=tied)
    keys = set(m02.model(config).state_dict())
    expected = set(m02.checkpoint_shapes(config))
    assert keys == expected, (
        f"missing {sorted(expected - keys)}, unexpected {sorted(keys - expected)}"
    )


@pytest.mark.clause("M02.13")
@pytest.mark.parametrize(("heads", "kv_heads"), [(4, 4), (4, 2), (4, 1)])
def test_state_dict_shapes_follow_the_head_counts(m02, heads, kv_heads):
    config = m02.config(num_attention_heads=heads, num_key_value_heads=kv_heads)
    state = m02.model(config).state_dict()
    for name, shape in m02.checkpoint_shapes(config).items():
        assert tuple(state[name].shape) == shape, name


@pytest.mark.clause("M02.14")
def test_a_checkpoint_loads_strictly_and_reads_back(m02):
    config = m02.config()
    state = m02.random_state(config, seed=1)
    model = m02.loaded(config, state)
    back = model.state_dict()
    for name, tensor in state.items():
        assert torch.equal(back[name], tensor), name
    state["model.norm.weight"].add_(1.0)  # a load copies: the checkpoint stays the caller's
    assert not torch.equal(model.state_dict()["model.norm.weight"], state["model.norm.weight"])


@pytest.mark.clause("M02.14")
def test_strict_round_trip_between_two_models_keeps_the_logits(m02):
    config = m02.config()
    source = m02.model(config, seed=2)
    target = m02.model(config, seed=3)
    target.load_state_dict(source.state_dict(), strict=True)
    ids = m02.ids(2, 6, config.vocab_size, seed=4)
    assert_close(target(ids).logits, source(ids).logits, "logits after a round trip")


# torch's strict load raises RuntimeError; a ValueError is the policy's class for a bad value.
LOAD_ERRORS = (RuntimeError, ValueError)


@pytest.mark.clause("M02.15")
def test_a_checkpoint_with_biases_does_not_load_strictly(m02):
    config = m02.config()
    state = m02.random_state(config, seed=5)
    key = "model.layers.1.self_attn.q_proj.bias"
    state[key] = torch.zeros(config.hidden_size, device=state["lm_head.weight"].device)
    model = m02.model(config)
    assert_rejects(lambda: model.load_state_dict(state), LOAD_ERRORS, key)  # strict by default


@pytest.mark.clause("M02.15")
@pytest.mark.parametrize("edit", ["missing", "misshaped"])
def test_a_checkpoint_missing_a_key_or_misshaped_does_not_load_strictly(m02, edit):
    """A norm gain: a key no fused storage (M02.34) renames, so every error can name it."""
    config = m02.config()
    state = m02.random_state(config, seed=6)
    key = "model.layers.1.post_attention_layernorm.weight"
    if edit == "missing":
        del state[key]
    else:
        state[key] = state[key][:-1]
    model = m02.model(config)
    assert_rejects(lambda: model.load_state_dict(state), LOAD_ERRORS, key)  # strict by default
