"""Tier 1: causality, attention against a decomposed oracle, loss, dropout, state, backward."""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import assert_close, candidate, test_device
from gptlab_testkit.objects import assert_same_object

tg = candidate("TINY_GPT_MODULE")

pytestmark = [pytest.mark.tier1, pytest.mark.contract]


def layer_norm_by_hand(x: torch.Tensor, norm, eps: float) -> torch.Tensor:
    mean = x.mean(dim=-1, keepdim=True)
    variance = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
    return (x - mean) / torch.sqrt(variance + eps) * norm.weight + norm.bias


def gelu_by_hand(x: torch.Tensor) -> torch.Tensor:
    """Exact GELU: x * Phi(x) with the error function (not the tanh approximation)."""
    return 0.5 * x * (1.0 + torch.erf(x / 2**0.5))


def decoder_by_hand(model, tokens: torch.Tensor, attention_by_hand) -> torch.Tensor:
    """Logits recomputed from the parameters: pre-norm blocks, exact GELU, tied head."""
    config = model.config
    eps = config.layer_norm_eps
    T = tokens.size(1)
    x = model.token_embedding.weight[tokens] + model.position_embedding.weight[:T]
    for block in model.blocks:
        attended, _, _ = attention_by_hand(
            block.attention, config.n_heads, layer_norm_by_hand(x, block.attention_norm, eps)
        )
        x = x + attended
        mlp = block.mlp
        hidden = layer_norm_by_hand(x, block.mlp_norm, eps)
        hidden = gelu_by_hand(hidden @ mlp.up_proj.weight.T + mlp.up_proj.bias)
        x = x + hidden @ mlp.down_proj.weight.T + mlp.down_proj.bias
    return layer_norm_by_hand(x, model.final_norm, eps) @ model.lm_head.weight.T


def direct_shifted_cross_entropy(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Written out: -log p(label[t+1] | logits[t]) averaged over labels that are not -100."""
    log_probs = torch.log_softmax(logits[:, :-1].double(), dim=-1)  # [B, T-1, V]
    targets = labels[:, 1:]
    scored = targets != -100
    picked = log_probs.gather(-1, targets.clamp(min=0)[..., None])[..., 0]
    return -(picked[scored]).sum() / scored.sum()


@pytest.mark.owner("mask_polarity")
def test_changed_future_token_leaves_earlier_logits(make_model, make_tokens):
    model = make_model()
    tokens = make_tokens(2, 8)
    logits = model(tokens).logits
    for position in range(1, 8):
        changed = tokens.clone()
        changed[:, position] = (changed[:, position] + 1) % model.config.vocab_size
        changed_logits = model(changed).logits
        assert_close(
            changed_logits[:, :position], logits[:, :position], f"logits before {position}"
        )
        assert not torch.allclose(changed_logits[:, position], logits[:, position])


@pytest.mark.owner("head_split")
def test_first_block_attention_matches_decomposed_oracle(make_model, decomposed_attention):
    model = make_model()
    attention = model.blocks[0].attention
    hidden = torch.randn(2, 6, model.config.d_model, generator=torch.Generator().manual_seed(1))
    hidden = hidden.to(test_device())
    with torch.no_grad():
        output, _ = attention(hidden, None)
        expected, _, _ = decomposed_attention(attention, model.config.n_heads, hidden)
    assert_close(output, expected, "attention output")


@pytest.mark.owner("head_split")
def test_attention_returns_heads_in_qkv_layout(make_model, decomposed_attention):
    model = make_model()
    attention = model.blocks[0].attention
    hidden = torch.randn(2, 5, model.config.d_model, generator=torch.Generator().manual_seed(2))
    hidden = hidden.to(test_device())
    with torch.no_grad():
        _, (key, value) = attention(hidden, None)
        _, expected_key, expected_value = decomposed_attention(
            attention, model.config.n_heads, hidden
        )
    assert key.shape == (2, model.config.n_heads, 5, model.config.head_dim)
    assert_close(key, expected_key, "key [B, H, T, D]")
    assert_close(value, expected_value, "value [B, H, T, D]")


@pytest.mark.owner("decoder_forward")
def test_logits_match_a_forward_recomputed_by_hand(make_model, make_tokens, decomposed_attention):
    model = make_model(layer_norm_eps=1e-2)
    tokens = make_tokens(2, 7)
    with torch.no_grad():
        expected = decoder_by_hand(model, tokens, decomposed_attention)
        assert_close(model(tokens).logits, expected, "logits against the hand-written decoder")


@pytest.mark.owner("tying")
def test_logits_are_computed_through_lm_head(make_model, make_tokens):
    model = make_model()
    model.lm_head.weight = torch.nn.Parameter(torch.zeros_like(model.lm_head.weight))
    logits = model(make_tokens(2, 5)).logits
    assert torch.equal(logits, torch.zeros_like(logits))


@pytest.mark.owner("loss_shift")
def test_loss_equals_direct_shifted_cross_entropy(make_model, make_tokens):
    model = make_model()
    tokens = make_tokens(3, 9)
    labels = make_tokens(3, 9, seed=5)
    labels[0, 3] = labels[1, 1:5] = labels[2, -1] = -100
    output = model(tokens, labels=labels)
    expected = direct_shifted_cross_entropy(output.logits.detach(), labels)
    assert_close(output.loss.double(), expected, "loss")


@pytest.mark.owner("loss_shift")
def test_labels_equal_to_inputs_score_next_token_prediction(make_model, make_tokens):
    model = make_model()
    tokens = make_tokens(2, 7)
    output = model(tokens, labels=tokens)
    expected = direct_shifted_cross_entropy(output.logits.detach(), tokens)
    assert_close(output.loss.double(), expected, "loss with labels = input_ids")


@pytest.mark.owner("loss_shift")
@pytest.mark.parametrize("T", [1, 5])
def test_nothing_to_score_gives_zero_that_backpropagates(make_model, make_tokens, T):
    model = make_model()
    labels = torch.full((2, T), -100, dtype=torch.long, device=test_device())
    if T > 1:
        labels[:, 0] = 3  # position 0 is never a target: still nothing to score
    loss = model(make_tokens(2, T), labels=labels).loss
    assert loss.requires_grad
    assert loss.item() == 0.0
    loss.backward()
    for name, parameter in model.named_parameters():
        assert parameter.grad is None or torch.isfinite(parameter.grad).all(), name


@pytest.mark.owner("eval_dropout")
def test_eval_is_bitwise_deterministic_with_dropout(make_model, make_tokens):
    model = make_model(dropout=0.5)
    tokens = make_tokens(2, 10)
    first = model(tokens).logits
    second = model(tokens).logits
    assert torch.equal(first, second)


@pytest.mark.owner("eval_dropout")
def test_eval_output_ignores_configured_dropout(make_model, make_tokens):
    tokens = make_tokens(2, 10)
    with_dropout = make_model(seed=3, dropout=0.5)(tokens).logits
    without_dropout = make_model(seed=3, dropout=0.0)(tokens).logits
    assert_close(with_dropout, without_dropout, "eval logits with dropout configured")


@pytest.mark.owner("eval_dropout")
def test_training_mode_applies_dropout(make_model, make_tokens):
    model = make_model(dropout=0.5).train()
    tokens = make_tokens(2, 10)
    assert not torch.equal(model(tokens).logits, model(tokens).logits)


@pytest.mark.owner("tying")
def test_strict_state_round_trip_keeps_outputs_and_tying(make_model, make_tokens):
    source, target = make_model(seed=1), make_model(seed=2)
    tokens = make_tokens(2, 6)
    target.load_state_dict(source.state_dict(), strict=True)
    assert_same_object(
        target.lm_head.weight, target.token_embedding.weight, "lm_head and token_embedding weights"
    )
    assert_close(target(tokens).logits, source(tokens).logits, "logits after load")


@pytest.mark.owner("gradients")
def test_backward_gives_finite_gradient_on_every_parameter(make_model, make_tokens):
    model = make_model().train()
    tokens = make_tokens(2, 8)
    model(tokens, labels=tokens).loss.backward()
    for name, parameter in model.named_parameters():
        assert parameter.grad is not None, f"{name} has no gradient"
        assert torch.isfinite(parameter.grad).all(), f"{name} has a non-finite gradient"
        if not name.startswith("position_embedding"):
            assert parameter.grad.abs().sum() > 0, f"{name} has an all-zero gradient"


@pytest.mark.owner("loss_shift")
def test_ignored_labels_leave_the_loss_of_the_rest(make_model, make_tokens):
    """Loss with some labels -100 equals the mean over the scored positions alone."""
    model = make_model()
    tokens = make_tokens(1, 8)
    labels = make_tokens(1, 8, seed=9)
    labels[0, 2:6] = -100
    loss = model(tokens, labels=labels).loss
    logits = model(tokens).logits.double()
    log_probs = torch.log_softmax(logits[0, :-1], dim=-1)
    scored = [t for t in range(1, 8) if int(labels[0, t]) != -100]
    expected = -torch.stack([log_probs[t - 1, int(labels[0, t])] for t in scored]).mean()
    assert_close(loss.double(), expected, "loss over the scored positions only")


@pytest.mark.owner("loss_shift")
def test_one_scored_label_gives_that_tokens_cross_entropy(make_model, make_tokens):
    model = make_model()
    tokens = make_tokens(2, 6)
    labels = torch.full_like(tokens, -100)
    labels[1, 4] = 7
    loss = model(tokens, labels=labels).loss
    logits = model(tokens).logits.double()
    expected = -torch.log_softmax(logits[1, 3], dim=-1)[7]
    assert_close(loss.double(), expected, "one scored label")


@pytest.mark.owner("decoder_forward")
@pytest.mark.parametrize("block_index", [0, -1], ids=["first block", "last block"])
def test_mlp_is_up_exact_gelu_down(make_model, block_index):
    """The MLP alone, on inputs wide enough that the tanh GELU differs from the exact one."""
    mlp = make_model().blocks[block_index].mlp
    generator = torch.Generator().manual_seed(block_index + 2)
    x = (4 * torch.randn(3, 5, mlp.up_proj.in_features, generator=generator)).to(test_device())
    hidden = gelu_by_hand(x @ mlp.up_proj.weight.T + mlp.up_proj.bias)
    expected = hidden @ mlp.down_proj.weight.T + mlp.down_proj.bias
    assert_close(mlp(x), expected, "mlp(x) = down_proj(gelu_exact(up_proj(x)))")


@pytest.mark.owner("gradients")
def test_positions_in_use_receive_a_gradient(make_model, make_tokens):
    model = make_model().train()
    T = 6
    tokens = make_tokens(2, T)
    model(tokens, labels=tokens).loss.backward()
    grad = model.position_embedding.weight.grad
    assert grad is not None, "position_embedding has no gradient"
    # Positions 0..T-2 predict a label; the last one's logits are never scored.
    assert (grad[: T - 1].abs().sum(dim=-1) > 0).all(), "a scored position got no gradient"
    assert torch.equal(grad[T - 1 :], torch.zeros_like(grad[T - 1 :])), "an unscored one got one"


@pytest.mark.owner("gradients")
def test_a_step_on_the_position_embedding_alone_lowers_the_loss(make_model, make_tokens):
    model = make_model()
    tokens = make_tokens(2, 8)
    loss = model(tokens, labels=tokens).loss
    loss.backward()  # (a fresh model: .grad is this loss's gradient alone)
    grad = model.position_embedding.weight.grad
    assert grad is not None, "positions are not part of the graph"
    with torch.no_grad():
        model.position_embedding.weight -= 0.05 * grad / grad.norm()
    assert model(tokens, labels=tokens).loss < loss, "positions are not part of the graph"
