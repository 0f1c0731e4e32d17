"""The fragment's interface, checkpoint names and seeded construction (M10.1, M10.9, M10.11)."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from gptlab_testkit import assert_close, candidate
from gptlab_testkit.objects import assert_same_object

fragment = candidate("FRAGMENT_LM_MODULE")

pytestmark = [pytest.mark.contract, pytest.mark.owner("fragment_interface")]

M02_FIELDS = (
    "vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
    "num_key_value_heads", "head_dim", "intermediate_size", "max_position_embeddings",
)  # fmt: skip


@pytest.mark.clause("M10.1")
def test_config_fields_defaults_and_frozen(m10):
    config = fragment.FragmentConfig(**{name: m10.plain().__dict__[name] for name in M02_FIELDS})
    assert (config.num_experts, config.experts_per_token) == (4, 2)
    assert (config.rope_theta, config.tie_word_embeddings) == (10000.0, True)
    assert config.max_position_embeddings == 64 and config.num_hidden_layers == 2
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.num_experts = 3  # type: ignore[misc]


@pytest.mark.clause("M10.1")
def test_forward_takes_the_kit_signature_by_keyword(m10):
    config = m10.config()
    model = m10.loaded(config, m10.random_state(config, seed=1))
    ids, positions = m10.ids(2, 5, seed=2), m10.runs([0, 3], 5)
    out = model(
        input_ids=ids,
        positions=positions,
        past_key_values=None,
        cache_lengths=None,
        cache_start_positions=None,
        use_cache=False,
        return_router_state=False,
    )
    assert tuple(out.logits.shape) == (2, 5, config.vocab_size)
    assert out.logits.dtype == torch.float32


@pytest.mark.clause("M10.1")
def test_forward_takes_the_kit_signature_by_position(m10):
    config = m10.config()
    model = m10.loaded(config, m10.random_state(config, seed=3))
    ids, positions = m10.ids(1, 4, seed=4), m10.runs([2], 4)
    out = model(ids, positions, None, None, None, True, True)
    assert tuple(out.logits.shape) == (1, 4, config.vocab_size)
    assert len(out.past_key_values) == config.num_hidden_layers
    assert len(out.router_logits) == config.num_hidden_layers


@pytest.mark.clause("M10.9")
@pytest.mark.parametrize(
    "overrides",
    [{}, {"num_experts": 3, "experts_per_token": 1}, {"num_key_value_heads": 4}],
    ids=["default", "three-experts", "mha"],
)
def test_state_dict_has_the_checkpoint_names_and_shapes(m10, overrides):
    config = m10.config(**overrides)
    shapes = {name: tuple(t.shape) for name, t in m10.model(config).state_dict().items()}
    assert shapes == m10.checkpoint_shapes(config)


@pytest.mark.clause("M10.9")
def test_the_head_is_the_embedding_parameter(m10):
    config = m10.config()
    model = m10.loaded(config, m10.random_state(config, seed=5))
    assert_same_object(
        model.lm_head.weight, model.model.embed_tokens.weight, "lm_head and embed_tokens weights"
    )


@pytest.mark.clause("M10.9")
def test_a_strict_round_trip_keeps_the_logits(m10):
    config = m10.config()
    first = m10.model(config, seed=6)
    second = m10.model(config, seed=7)
    second.load_state_dict(first.state_dict(), strict=True)
    ids, positions = m10.ids(2, 6, seed=8), m10.runs([1, 9], 6)
    assert_close(second(ids, positions).logits, first(ids, positions).logits, atol=0, rtol=0)


@pytest.mark.clause("M10.9")
def test_a_loaded_checkpoint_is_copied(m10):
    config = m10.config()
    state = {name: t.clone() for name, t in m10.random_state(config, seed=9).items()}
    model = m10.loaded(config, state)
    ids, positions = m10.ids(1, 5, seed=10), m10.runs([4], 5)
    before = model(ids, positions).logits
    for tensor in state.values():
        tensor.add_(1.0)
    assert_close(model(ids, positions).logits, before, atol=0, rtol=0)


@pytest.mark.clause("M10.11")
@pytest.mark.parametrize(
    "overrides",
    [{}, {"experts_per_token": 1}, {"num_key_value_heads": 1}],
    ids=["default", "top1", "mqa"],
)
def test_seeded_construction_is_deterministic(m10, overrides):
    config = m10.config(**overrides)
    first, second = m10.model(config, seed=11), m10.model(config, seed=11)
    a, b = first.state_dict(), second.state_dict()
    assert a.keys() == b.keys()
    for name in a:
        assert torch.equal(a[name], b[name]), name
    ids, positions = m10.ids(2, 4, seed=12), m10.runs([0, 5], 4)
    assert_close(first(ids, positions).logits, first(ids, positions).logits, atol=0, rtol=0)
