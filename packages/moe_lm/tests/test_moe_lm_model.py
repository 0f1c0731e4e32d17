"""The causal LM: M02's decoder with the mixture in place of the SwiGLU of selected layers."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from gptlab_testkit import assert_close, candidate

moe = candidate("MOE_LM_MODULE")

pytestmark = [pytest.mark.contract, pytest.mark.owner("moe_model")]


@pytest.mark.clause("M05.14")
def test_config_fields_defaults_and_frozen(m05):
    config = moe.MoELMConfig(
        **{
            k: v
            for k, v in m05.plain_config().__dict__.items()
            if k not in ("num_experts", "experts_per_token", "moe_layers", "tie_word_embeddings")
        }
    )
    assert (config.num_experts, config.experts_per_token, config.moe_layers) == (4, 2, None)
    assert config.tie_word_embeddings is False
    assert config.hidden_size == 32 and config.num_hidden_layers == 2
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.num_experts = 3  # type: ignore[misc]


@pytest.mark.clause("M05.14")
@pytest.mark.parametrize(
    "moe_layers", [(1,), (0,), None, ()], ids=["layer1", "layer0", "every", "none"]
)
def test_state_dict_replaces_the_mlp_of_moe_layers_only(m05, moe_layers):
    config = m05.config(moe_layers=moe_layers)
    shapes = {name: tuple(t.shape) for name, t in m05.lm(config).state_dict().items()}
    assert shapes == m05.checkpoint_shapes(config)


@pytest.mark.clause("M05.14")
def test_forward_returns_logits_and_loss(m05):
    config = m05.config()
    model = m05.loaded_lm(config, m05.random_state(config, seed=150))
    ids = m05.ids(2, 5, config.vocab_size, seed=151)
    out = model(ids)
    assert hasattr(out, "logits") and hasattr(out, "loss")
    assert tuple(out.logits.shape) == (2, 5, config.vocab_size)
    assert out.loss is None
    assert model(ids, labels=ids).loss is not None


@pytest.mark.clause("M05.15")
@pytest.mark.parametrize("moe_layers", [(1,), (0,), None], ids=["layer1", "layer0", "every"])
def test_logits_equal_the_decomposed_oracle(m05, moe_layers):
    config = m05.config(moe_layers=moe_layers)
    state = m05.random_state(config, seed=152)
    ids = m05.ids(3, 7, config.vocab_size, seed=153)
    positions = m05.gapped_positions(3, 7, seed=154)
    expected = m05.logits(config, state, ids, positions)
    logits = m05.loaded_lm(config, state)(ids, positions=positions).logits
    assert_close(logits.double(), expected, "MoE LM logits", atol=1e-4, rtol=1e-4)


@pytest.mark.clause("M05.15")
def test_top_one_routing_in_every_layer(m05):
    config = m05.config(moe_layers=None, experts_per_token=1, num_experts=3)
    state = m05.random_state(config, seed=155)
    ids = m05.ids(2, 6, config.vocab_size, seed=156)
    positions = m05.gapped_positions(2, 6, seed=157)
    expected = m05.logits(config, state, ids, positions)
    logits = m05.loaded_lm(config, state)(ids, positions=positions).logits
    assert_close(logits.double(), expected, "top-1 MoE LM logits", atol=1e-4, rtol=1e-4)


@pytest.mark.clause("M05.15")
def test_default_positions_and_the_shifted_loss(m05):
    config = m05.config()
    state = m05.random_state(config, seed=158)
    ids = m05.ids(2, 6, config.vocab_size, seed=159)
    positions = torch.arange(6, device=ids.device).expand(2, 6)
    expected = m05.logits(config, state, ids, positions)
    out = m05.loaded_lm(config, state)(ids, labels=ids)
    assert_close(out.logits.double(), expected, "logits at default positions", atol=1e-4, rtol=1e-4)
    loss = torch.nn.functional.cross_entropy(
        expected[:, :-1].reshape(-1, config.vocab_size), ids[:, 1:].reshape(-1)
    )
    assert_close(out.loss.double(), loss, "shifted cross-entropy", atol=1e-4, rtol=1e-4)


@pytest.mark.clause("M05.13")
def test_seeded_lm_constructions_are_equal(m05):
    config = m05.config(moe_layers=None)
    first, second = m05.lm(config, seed=3).state_dict(), m05.lm(config, seed=3).state_dict()
    assert sorted(first) == sorted(second)
    for name in first:
        assert torch.equal(first[name], second[name]), name


@pytest.mark.clause("M05.15")
def test_a_tied_head_reads_the_embedding(m05):
    config = m05.config(tie_word_embeddings=True)
    state = m05.random_state(config, seed=160)
    ids = m05.ids(2, 5, config.vocab_size, seed=161)
    positions = m05.gapped_positions(2, 5, seed=162)
    expected = m05.logits(config, state, ids, positions)
    for model in (m05.lm(config, seed=4), m05.loaded_lm(config, state)):
        names = set(model.state_dict())
        assert "lm_head.weight" in names and "model.embed_tokens.weight" in names
    logits = m05.loaded_lm(config, state)(ids, positions=positions).logits
    assert_close(logits.double(), expected, "tied-head logits", atol=1e-4, rtol=1e-4)


@pytest.mark.clause("M05.14")
def test_a_strict_load_copies_the_checkpoint(m05):
    config = m05.config()
    state = m05.random_state(config, seed=163)
    model = m05.loaded_lm(config, state)
    ids = m05.ids(1, 4, config.vocab_size, seed=164)
    before = model(ids).logits
    for tensor in state.values():
        tensor.mul_(0.5)  # a later write to the checkpoint leaves the model as it is
    assert_close(model(ids).logits, before, "logits after the checkpoint changed")


def copies_of_expert_zero(state, prefix: str, experts: int) -> None:
    for e in range(1, experts):
        for name in ("gate_proj", "up_proj", "down_proj"):
            state[f"{prefix}experts.{e}.{name}.weight"] = state[f"{prefix}experts.0.{name}.weight"]


@pytest.mark.clause("M05.10")
@pytest.mark.parametrize("moe_layers", [(1,), None], ids=["layer1", "every"])
def test_an_lm_of_equal_experts_is_the_dense_m02_model(m05, moe_layers):
    config = m05.config(moe_layers=moe_layers)
    state = m05.random_state(config, seed=144)
    dense_state = dict(state)
    for i in range(config.num_hidden_layers):
        p = f"model.layers.{i}.mlp."
        if p + "gate.weight" in state:
            copies_of_expert_zero(state, p, config.num_experts)
            del dense_state[p + "gate.weight"]
            for e in range(config.num_experts):
                for name in ("gate_proj", "up_proj", "down_proj"):
                    del dense_state[f"{p}experts.{e}.{name}.weight"]
                    dense_state[f"{p}{name}.weight"] = state[f"{p}experts.0.{name}.weight"]
    dense = m05.plain_config(moe_layers=())
    ids = m05.ids(2, 6, config.vocab_size, seed=145)
    positions = m05.gapped_positions(2, 6, seed=146)
    expected = m05.logits(dense, dense_state, ids, positions)
    logits = m05.loaded_lm(config, state)(ids, positions=positions).logits
    assert_close(
        logits.double(), expected, "equal experts vs the dense model", atol=1e-4, rtol=1e-4
    )
    assert torch.isfinite(logits).all()
