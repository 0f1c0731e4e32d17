"""Registration: every learned tensor a Parameter, buffers follow .to(), the tied head."""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import assert_close, candidate
from gptlab_testkit.objects import assert_same_object

lm = candidate("MODERN_LM_MODULE")

pytestmark = [pytest.mark.contract, pytest.mark.owner("modern_registration")]


def expected_parameter_count(config) -> int:
    V, C, F = config.vocab_size, config.hidden_size, config.intermediate_size
    H, K, D = config.num_attention_heads, config.num_key_value_heads, config.head_dim
    per_layer = 2 * C * H * D + 2 * C * K * D + 3 * C * F + 2 * C
    head = 0 if config.tie_word_embeddings else V * C
    return V * C + config.num_hidden_layers * per_layer + C + head


@pytest.mark.clause("M02.16")
@pytest.mark.parametrize("tied", [False, True], ids=["untied", "tied"])
def test_parameter_count_matches_the_formula(m02, tied):
    config = m02.config(tie_word_embeddings=tied, num_hidden_layers=3)
    model = m02.model(config)
    assert sum(p.numel() for p in model.parameters()) == expected_parameter_count(config)


@pytest.mark.clause("M02.16")
def test_every_parameter_gets_a_gradient(m02):
    config = m02.config()
    model = m02.loaded(config, m02.random_state(config, seed=1)).train()
    ids = m02.ids(2, 5, config.vocab_size, seed=2)
    model(ids, labels=ids).loss.backward()
    missing = [name for name, p in model.named_parameters() if p.grad is None]
    assert not missing, f"no gradient for {missing}"
    assert sum(p.grad.abs().sum() for p in model.parameters()) > 0


@pytest.mark.clause("M02.17")
def test_to_float64_moves_every_buffer_and_computes_in_float64(m02):
    config = m02.config()
    state = m02.random_state(config, seed=3)
    model = m02.loaded(config, state).to(torch.float64)
    for name, tensor in [*model.named_parameters(), *model.named_buffers()]:
        if tensor.is_floating_point():
            assert tensor.dtype == torch.float64, name
    ids = m02.ids(2, 9, config.vocab_size, seed=4)
    positions = m02.gapped_positions(2, 9, seed=5)
    expected = m02.logits(config, {k: v.double() for k, v in state.items()}, ids, positions)
    logits = model(ids, positions=positions).logits
    assert logits.dtype == torch.float64
    # Llama computes inv_freq in float32: fp32-level agreement, not float64-exact.
    assert_close(logits, expected, "float64 logits", atol=1e-5, rtol=1e-5)


@pytest.mark.clause("M02.11")
def test_a_new_model_is_float32_and_so_are_its_logits(m02):
    config = m02.config()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model = lm.ModernLM(config)  # as built, before any move
    dtypes = {name: p.dtype for name, p in model.named_parameters()}
    assert set(dtypes.values()) == {torch.float32}, dtypes
    ids = m02.ids(2, 3, config.vocab_size, seed=1).cpu()
    assert model.eval()(ids).logits.dtype == torch.float32


@pytest.mark.clause("M02.11")
def test_bfloat16_logits_are_bfloat16(m02):
    config = m02.config()
    model = m02.loaded(config, m02.random_state(config, seed=2)).to(torch.bfloat16)
    logits = model(m02.ids(2, 4, config.vocab_size, seed=3)).logits
    assert logits.dtype == torch.bfloat16


@pytest.mark.clause("M02.17")
def test_float64_is_float64_inside_where_rope_is_exact(m02):
    """At position 0 every rotation is the identity in any precision, so a float64 model
    matches a float64 oracle to 1e-9; a norm, an attention or a projection that computes
    in float32 inside is off by about 1e-7."""
    config = m02.config()
    state = {k: v.double() for k, v in m02.random_state(config, seed=8).items()}
    model = m02.loaded(config, state).to(torch.float64)
    ids = m02.ids(2, 7, config.vocab_size, seed=9)
    positions = m02.positions([0, 0], 7) * 0  # every token at position 0 (causal by index)
    expected = m02.logits(config, state, ids, positions)
    logits = model(ids, positions=positions).logits
    assert logits.dtype == torch.float64
    assert_close(logits, expected, "float64 logits at position 0", atol=1e-9, rtol=1e-9)


@pytest.mark.clause("M02.21")
def test_a_tied_head_is_the_embedding_parameter_also_after_a_strict_load(m02):
    config = m02.config(tie_word_embeddings=True)
    model = m02.model(config)
    assert_same_object(
        model.lm_head.weight, model.model.embed_tokens.weight, "lm_head and embed_tokens weights"
    )
    model.load_state_dict(m02.random_state(config, seed=5), strict=True)
    assert_same_object(
        model.lm_head.weight, model.model.embed_tokens.weight, "lm_head and embed_tokens weights"
    )


@pytest.mark.clause("M02.21")
def test_tied_logits_read_the_embedding(m02):
    config = m02.config(tie_word_embeddings=True)
    state = m02.random_state(config, seed=6)
    ids = m02.ids(2, 7, config.vocab_size, seed=7)
    expected = m02.logits(config, state, ids)
    assert_close(m02.loaded(config, state)(ids).logits, expected, "tied-head logits")
