"""Valid edges the contract promises that the other contract tests leave untried (each
found by a mutmut survivor of the reference): a window filled to max_position_embeddings,
labels on one-token rows and one-row batches, and the layer callables on one vector."""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import assert_close, test_device

pytestmark = [pytest.mark.contract, pytest.mark.owner("modern_decoder")]


@pytest.mark.clause("M02.23", "M02.25")
def test_a_window_of_exactly_max_position_embeddings_tokens_is_valid(m02):
    """positions=None over T = max_position_embeddings means 0..T-1, all in range."""
    config = m02.config(max_position_embeddings=7)
    state = m02.random_state(config, seed=21)
    ids = m02.ids(2, 7, config.vocab_size, seed=22)
    logits = m02.loaded(config, state)(ids).logits
    assert_close(logits, m02.logits(config, state, ids), "logits over a full window")


@pytest.mark.clause("M02.23", "M02.27")
def test_the_last_position_is_valid(m02):
    """Supplied positions may reach max_position_embeddings - 1 in any row."""
    config = m02.config(max_position_embeddings=9)
    state = m02.random_state(config, seed=23)
    ids = m02.ids(2, 3, config.vocab_size, seed=24)
    positions = m02.positions([0, 6], 3)  # row 1 ends at 8 = max - 1
    logits = m02.loaded(config, state)(ids, positions=positions).logits
    assert_close(logits, m02.logits(config, state, ids, positions), "logits at the last position")


@pytest.mark.clause("M02.23", "M02.31")
def test_labels_on_one_token_rows_give_a_zero_loss_that_backpropagates(m02):
    """T = 1: no logit has a next label to score."""
    config = m02.config()
    model = m02.model(config).train()
    ids = m02.ids(3, 1, config.vocab_size, seed=25)
    out = model(ids, labels=ids.clone())
    assert out.logits.shape == (3, 1, config.vocab_size)
    assert out.loss is not None and out.loss.item() == 0.0
    out.loss.backward()


@pytest.mark.clause("M02.23", "M02.31")
def test_labels_on_a_one_row_batch_give_the_shifted_cross_entropy(m02):
    config = m02.config()
    model = m02.loaded(config, m02.random_state(config, seed=26))
    ids = m02.ids(1, 6, config.vocab_size, seed=27)
    out = model(ids, labels=ids)
    expected = torch.nn.functional.cross_entropy(out.logits[0, :-1], ids[0, 1:])
    assert_close(out.loss, expected, "one-row loss")


@pytest.mark.clause("M02.18", "M02.20")
def test_the_norms_and_mlps_take_a_single_vector(m02):
    """`[..., C] -> [..., C]` includes a bare `[C]` vector."""
    config = m02.config()
    state = m02.random_state(config, seed=28, scale=0.5)
    model = m02.loaded(config, state)
    generator = torch.Generator().manual_seed(29)
    x = (torch.randn(config.hidden_size, generator=generator) * 2.0).to(test_device())
    for path in ("model.layers.1.input_layernorm", "model.norm"):
        out = model.get_submodule(path)(x)
        expected = m02.rms_norm(x, state[f"{path}.weight"], config.rms_norm_eps)
        assert out.shape == x.shape, path
        assert_close(out, expected, path)
    path = "model.layers.1.mlp"
    out = model.get_submodule(path)(x)
    assert out.shape == x.shape, path
    assert_close(out, m02.swiglu(x, state, f"{path}."), path)
