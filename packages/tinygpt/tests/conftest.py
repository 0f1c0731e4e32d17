"""Fixtures for the tinygpt suite: tiny candidate models with seeded, non-trivial weights.

Every model is built from the candidate's contract names only (`TINY_GPT_MODULE`), with
parameters overwritten by name so attention is far from uniform and logits are spread.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch

from gptlab_testkit import candidate, test_device

tg = candidate("TINY_GPT_MODULE")

# vocab 32, context 16, C 16, 2 layers, 4 heads of 4, d_ff 32
TINY_SIZES: dict[str, Any] = {
    "vocab_size": 32,
    "context_length": 16,
    "d_model": 16,
    "n_layers": 2,
    "n_heads": 4,
    "d_ff": 32,
}

# The hand-set greedy transition used by the generation tier (token -> next token).
TRANSITION = {0: 0, 1: 2, 2: 3, 3: 0, 4: 0, 5: 6, 6: 7, 7: 1}


def randomize_parameters(model: torch.nn.Module, seed: int) -> None:
    """Overwrite every (unique) parameter from a seeded generator; norms stay near 1."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            noise = torch.randn(parameter.shape, generator=generator)
            value = 1.0 + 0.2 * noise if name.endswith("norm.weight") else 0.3 * noise
            parameter.copy_(value.to(parameter.device, parameter.dtype))


@pytest.fixture(scope="session")
def tiny_sizes() -> dict[str, Any]:
    return dict(TINY_SIZES)


@pytest.fixture(scope="session")
def make_model() -> Callable[..., Any]:
    """make_model(seed=0, **config_overrides) -> eval-mode model on test_device()."""

    def build(seed: int = 0, **overrides: Any) -> Any:
        config = tg.GPTConfig(**{**TINY_SIZES, **overrides})
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            model = tg.TinyGPT(config)
        randomize_parameters(model, seed)
        return model.to(test_device()).eval()

    return build


@pytest.fixture(scope="session")
def make_tokens() -> Callable[..., torch.Tensor]:
    """make_tokens(B, T, seed=0, vocab_size=32) -> long [B, T] on test_device()."""

    def build(B: int, T: int, seed: int = 0, vocab_size: int = TINY_SIZES["vocab_size"]) -> Any:
        generator = torch.Generator().manual_seed(seed)
        return torch.randint(0, vocab_size, (B, T), generator=generator).to(test_device())

    return build


@pytest.fixture(scope="session")
def shared_model(make_model: Callable[..., Any]) -> Any:
    """One model for property tests (hypothesis runs many examples on it; never mutated)."""
    return make_model(seed=7)


@pytest.fixture(scope="session")
def transition() -> dict[int, int]:
    return dict(TRANSITION)


@pytest.fixture
def transition_model() -> Any:
    """Greedy decoding follows TRANSITION exactly, whatever the prefix.

    Blocks write nothing to the residual stream (out_proj and down_proj zeroed), positions
    are zero, token i embeds as 4 * e_i, and lm_head (replaced, as the contract allows)
    maps e_i to a logit peak at TRANSITION[i]: after the final LayerNorm the hidden state
    is positive at i and equally negative elsewhere.
    """
    sizes = {"vocab_size": 8, "context_length": 16, "d_model": 8, "n_layers": 2, "n_heads": 2}
    config = tg.GPTConfig(**sizes, d_ff=16)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model = tg.TinyGPT(config)
    randomize_parameters(model, 0)
    V = config.vocab_size
    head = torch.zeros(V, V)
    for token, successor in TRANSITION.items():
        head[successor, token] = 1.0
    with torch.no_grad():
        for block in model.blocks:
            for projection in (block.attention.out_proj, block.mlp.down_proj):
                projection.weight.zero_()
                projection.bias.zero_()
        model.position_embedding.weight.zero_()
        model.token_embedding.weight.copy_(4.0 * torch.eye(V))
        model.final_norm.weight.fill_(1.0)
        model.final_norm.bias.zero_()
    model.lm_head.weight = torch.nn.Parameter(head)
    return model.to(test_device()).eval()


def attention_by_hand(
    attention: Any,
    n_heads: int,
    hidden: torch.Tensor,
    past_key: torch.Tensor | None = None,
    past_value: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Decomposed attention oracle, no SDPA and no reshape: one loop iteration per head.

    The fused projection is read as [q | k | v] with head h owning columns h*D..(h+1)*D of
    each third; scores, the mask j <= P + i and the softmax are written out. Returns the
    output [B, T, C] and the keys and values [B, H, P+T, D] (past first).
    """
    _, T, C = hidden.shape  # [B, T, C]
    D = C // n_heads
    P = 0 if past_key is None else past_key.size(2)
    qkv = hidden @ attention.qkv_proj.weight.T + attention.qkv_proj.bias  # [B, T, 3C]
    query_position = torch.arange(T, device=hidden.device)[:, None] + P
    key_position = torch.arange(P + T, device=hidden.device)[None, :]
    allowed = key_position <= query_position  # [T, P+T]
    outputs, keys, values = [], [], []
    for h in range(n_heads):
        columns = slice(h * D, (h + 1) * D)
        q = qkv[..., 0:C][..., columns]  # [B, T, D]
        k = qkv[..., C : 2 * C][..., columns]
        v = qkv[..., 2 * C : 3 * C][..., columns]
        if past_key is not None and past_value is not None:
            k = torch.cat((past_key[:, h], k), dim=1)  # [B, P+T, D]
            v = torch.cat((past_value[:, h], v), dim=1)
        scores = q @ k.transpose(1, 2) / D**0.5  # [B, T, P+T]
        scores = scores.masked_fill(~allowed, float("-inf"))
        outputs.append(torch.softmax(scores, dim=-1) @ v)  # [B, T, D]
        keys.append(k)
        values.append(v)
    merged = torch.cat(outputs, dim=-1)  # heads side by side: [B, T, C]
    output = merged @ attention.out_proj.weight.T + attention.out_proj.bias
    return output, torch.stack(keys, dim=1), torch.stack(values, dim=1)


@pytest.fixture(scope="session")
def decomposed_attention() -> Callable[..., tuple[torch.Tensor, torch.Tensor, torch.Tensor]]:
    """decomposed_attention(attention, n_heads, hidden, past_key=None, past_value=None)."""
    return attention_by_hand
