"""The full stack: logits against the oracle and a hand-computed one-layer model, shapes,
loss, initialisation, eval determinism and a float16 forward (slice 2's stop)."""

from __future__ import annotations

import math

import pytest
import torch

from gptlab_testkit import assert_close, test_device

pytestmark = [pytest.mark.contract, pytest.mark.owner("modern_decoder")]


@pytest.mark.clause("M02.29", "M02.30")
def test_the_full_stack_equals_the_oracle(m02):
    config = m02.config(num_hidden_layers=3)
    state = m02.random_state(config, seed=1)
    ids, positions = m02.ids(2, 9, config.vocab_size, seed=2), m02.positions([0, 2], 9)
    expected = m02.logits(config, state, ids, positions)
    logits = m02.loaded(config, state)(ids, positions=positions).logits
    assert_close(logits, expected, "three-layer logits")


# ---- a tiny model computed by hand -----------------------------------------------------


def _norm(x: list[float], eps: float) -> list[float]:
    scale = 1.0 / math.sqrt(sum(v * v for v in x) / len(x) + eps)
    return [v * scale for v in x]


def _silu(v: float) -> float:
    return v / (1.0 + math.exp(-v))


@pytest.mark.clause("M02.29")
def test_a_tiny_deterministic_model_equals_its_hand_computation(m02):
    """V=3, C=2, one head, one layer, F=1. q = k = 0 (uniform attention), v = o = identity,
    gate reads channel 0, up channel 1, down writes both; head rows e0, e1, e0 + e1."""
    eps = 1e-6
    config = m02.config(
        vocab_size=3,
        hidden_size=2,
        num_hidden_layers=1,
        num_attention_heads=1,
        num_key_value_heads=1,
        head_dim=2,
        intermediate_size=1,
        rms_norm_eps=eps,
        rope_theta=10000.0,
    )
    embedding = [[1.0, 1.0], [2.0, -1.0], [0.5, 3.0]]
    head = [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]

    def t(rows) -> torch.Tensor:
        return torch.tensor(rows, device=test_device())

    state = {
        "model.embed_tokens.weight": t(embedding),
        "model.layers.0.input_layernorm.weight": t([1.0, 1.0]),
        "model.layers.0.self_attn.q_proj.weight": t([[0.0, 0.0], [0.0, 0.0]]),
        "model.layers.0.self_attn.k_proj.weight": t([[0.0, 0.0], [0.0, 0.0]]),
        "model.layers.0.self_attn.v_proj.weight": t([[1.0, 0.0], [0.0, 1.0]]),
        "model.layers.0.self_attn.o_proj.weight": t([[1.0, 0.0], [0.0, 1.0]]),
        "model.layers.0.post_attention_layernorm.weight": t([1.0, 1.0]),
        "model.layers.0.mlp.gate_proj.weight": t([[1.0, 0.0]]),
        "model.layers.0.mlp.up_proj.weight": t([[0.0, 1.0]]),
        "model.layers.0.mlp.down_proj.weight": t([[1.0], [1.0]]),
        "model.norm.weight": t([1.0, 1.0]),
        "lm_head.weight": t(head),
    }
    tokens = [0, 1, 2]
    expected = []
    normed = [_norm(embedding[token], eps) for token in tokens]
    for step, token in enumerate(tokens):
        seen = normed[: step + 1]  # uniform causal attention: the mean of the values so far
        h = [embedding[token][c] + sum(v[c] for v in seen) / len(seen) for c in range(2)]
        z = _norm(h, eps)
        mlp = _silu(z[0]) * z[1]
        out = _norm([h[0] + mlp, h[1] + mlp], eps)
        expected.append([sum(row[c] * out[c] for c in range(2)) for row in head])
    logits = m02.loaded(config, state)(t([tokens]).long()).logits
    assert_close(logits, t([expected]), "hand-computed logits", atol=1e-5, rtol=1e-5)


# ---- shapes, loss, initialisation, modes, dtype ------------------------------------------


@pytest.mark.clause("M02.23", "M02.24")
@pytest.mark.parametrize(("batch", "length"), [(1, 1), (3, 1), (1, 13), (3, 7)])
def test_logits_have_batch_length_vocab_shape(m02, batch, length):
    config = m02.config()
    model = m02.model(config)
    logits = model(m02.ids(batch, length, config.vocab_size, seed=length)).logits
    assert logits.shape == (batch, length, config.vocab_size)
    assert torch.isfinite(logits).all()


@pytest.mark.clause("M02.23", "M02.31")
def test_loss_is_the_shifted_cross_entropy(m02):
    config = m02.config()
    model = m02.loaded(config, m02.random_state(config, seed=1))
    ids = m02.ids(2, 8, config.vocab_size, seed=2)
    labels = ids.clone()
    labels[0, 3] = labels[1, 7] = -100
    out = model(ids, labels=labels)
    expected = torch.nn.functional.cross_entropy(
        out.logits[:, :-1].reshape(-1, config.vocab_size), labels[:, 1:].reshape(-1)
    )
    assert_close(out.loss, expected, "loss")
    assert model(ids).loss is None


@pytest.mark.clause("M02.31")
def test_one_scored_label_in_the_second_row_is_its_negative_log_likelihood(m02):
    """Every label ignored but row 1's label 4: the loss is -log p(label 4 | tokens 0..3)."""
    config = m02.config()
    model = m02.loaded(config, m02.random_state(config, seed=11))
    ids = m02.ids(2, 6, config.vocab_size, seed=12)
    labels = torch.full_like(ids, -100)
    labels[1, 4] = 7
    out = model(ids, labels=labels)
    expected = -out.logits[1, 3].log_softmax(-1)[7]
    assert_close(out.loss, expected, "the loss of one scored label")


@pytest.mark.clause("M02.31")
def test_a_batch_with_nothing_to_score_has_a_zero_loss_that_backpropagates(m02):
    config = m02.config()
    model = m02.model(config).train()
    ids = m02.ids(2, 5, config.vocab_size, seed=3)
    loss = model(ids, labels=torch.full_like(ids, -100)).loss
    assert loss.item() == 0.0
    loss.backward()


@pytest.mark.clause("M02.22")
@pytest.mark.parametrize("tied", [False, True], ids=["untied", "tied"])
def test_initialisation_gives_unit_norm_gains_and_a_loss_near_log_vocab(m02, tied):
    config = m02.config(tie_word_embeddings=tied, vocab_size=61)
    model = m02.model(config, seed=4)
    state = model.state_dict()
    for name in m02.checkpoint_shapes(config):
        if name.endswith("norm.weight"):
            assert torch.equal(state[name], torch.ones_like(state[name])), name
    ids = m02.ids(4, 16, config.vocab_size, seed=5)
    with torch.no_grad():
        loss = model(ids, labels=ids).loss.item()
    assert abs(loss - math.log(config.vocab_size)) < 1.0, loss


@pytest.mark.clause("M02.10")
def test_equal_seeds_build_equal_models(m02):
    config = m02.config()
    first, second = m02.model(config, seed=6).state_dict(), m02.model(config, seed=6).state_dict()
    assert all(torch.equal(first[name], second[name]) for name in first)


@pytest.mark.clause("M02.32")
def test_eval_is_deterministic_and_dropout_free(m02):
    config = m02.config(dropout=0.5)
    state = m02.random_state(config, seed=7)
    model = m02.loaded(config, state)
    ids = m02.ids(2, 9, config.vocab_size, seed=8)
    first, second = model(ids).logits, model(ids).logits
    assert torch.equal(first, second)
    assert_close(first, m02.logits(config, state, ids), "eval logits with dropout 0.5")


@pytest.mark.clause("M02.32")
def test_training_mode_applies_dropout(m02):
    config = m02.config(dropout=0.5)
    model = m02.loaded(config, m02.random_state(config, seed=7))
    ids = m02.ids(2, 9, config.vocab_size, seed=8)
    evaluated = model(ids).logits
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        trained = model.train()(ids).logits
    assert not trained.allclose(evaluated), "dropout 0.5 changed nothing in training mode"


@pytest.mark.clause("M02.11", "M02.19")
def test_a_float16_forward_with_large_activations_tracks_float32(m02):
    """Embeddings at magnitude ~300 (outlier-sized activations): float16 squares overflow,
    so a float16 model stays close to float32 only with float32 norm reductions."""
    config = m02.config()
    state = m02.random_state(config, seed=9)
    state["model.embed_tokens.weight"] = state["model.embed_tokens.weight"] * 300.0
    ids = m02.ids(2, 6, config.vocab_size, seed=10)
    expected = m02.logits(config, state, ids)
    logits = m02.loaded(config, state).to(torch.float16)(ids).logits
    assert logits.dtype == torch.float16
    assert_close(logits.float(), expected, "float16 logits", atol=0.15, rtol=0.05)
