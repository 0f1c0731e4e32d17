"""Contract clauses no other test pinned down, found by mutation testing.

Sizes of 1 are valid; attention dropout acts in training mode (not only the residual
writes); any finite positive temperature (up to the float32 maximum) draws from
softmax(logits / temperature). (Arguments of the wrong kind are this project's rule:
test_tinygpt_extensions.py.)
"""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import candidate, test_device

tg = candidate("TINY_GPT_MODULE")

pytestmark = [pytest.mark.contract]

FLOAT32_MAX = float(torch.finfo(torch.float32).max)


def _consistent_without_attention_dropout(trained: torch.Tensor, evaluated: torch.Tensor) -> bool:
    """Every element is 0, the eval value, or the eval value scaled by 1 / (1 - 0.5): what
    dropout on the attention output alone (wherever it sits) can make of it."""
    candidates = torch.stack([torch.zeros_like(evaluated), evaluated, 2.0 * evaluated])
    distance = (trained[None] - candidates).abs().amin(dim=0)
    return bool((distance <= 1e-5 + 1e-4 * evaluated.abs()).all())


@pytest.mark.tier1
@pytest.mark.owner("eval_dropout")
def test_training_mode_drops_attention_weights(make_model):
    """Dropout on the attention weights changes how values are mixed: with out_proj the
    identity, some output is neither zero nor the eval output (scaled), which dropout on
    the attention output alone can never produce."""
    model = make_model(dropout=0.5)
    attention = model.blocks[0].attention
    C = model.config.d_model
    with torch.no_grad():
        attention.out_proj.weight.copy_(torch.eye(C))
        attention.out_proj.bias.zero_()
    generator = torch.Generator().manual_seed(5)
    hidden = torch.randn(2, 6, C, generator=generator).to(test_device())
    with torch.no_grad():
        evaluated, _ = attention(hidden, None)
        model.train()
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(11)
            draws = [attention(hidden, None)[0] for _ in range(3)]
    assert not all(_consistent_without_attention_dropout(d, evaluated) for d in draws)


@pytest.mark.tier3
@pytest.mark.owner("sampler_determinism")
def test_largest_float32_temperature_draws_from_the_oracle(make_model, make_tokens):
    model = make_model()
    prompt = make_tokens(3, 4)
    generator = torch.Generator(device=test_device()).manual_seed(21)
    output = model.generate(prompt, 1, temperature=FLOAT32_MAX, generator=generator)
    with torch.no_grad():
        logits = model(prompt).logits[:, -1]
    probabilities = torch.softmax(logits / FLOAT32_MAX, dim=-1)
    oracle = torch.Generator(device=test_device()).manual_seed(21)
    assert torch.equal(output[:, -1:], torch.multinomial(probabilities, 1, generator=oracle))


@pytest.mark.tier0
@pytest.mark.owner("config_validation")
def test_config_accepts_sizes_of_one():
    config = tg.GPTConfig(1, 1, 1, 1, 1, 1)
    assert (config.vocab_size, config.n_layers, config.head_dim) == (1, 1, 1)
