"""Deterministic test models for the reference (the graded factories).

Both are fp32, on CPU, in eval mode; weights come from a fixed seed inside a
forked RNG, so building one neither depends on nor disturbs global RNG state.
"""

from __future__ import annotations

import torch
from torch import nn

from tinygpt import GPTConfig

from .model import MLP, CacheAwareCausalLM

TEST_CONFIG = GPTConfig(
    vocab_size=16, context_length=32, d_model=32, n_layers=2, n_heads=4, d_ff=64
)
TEST_SEED = 1234

EOS_TOKEN_ID = 0
# The EOS model's greedy transition, token -> next token (anything else -> EOS).
EOS_TRANSITIONS = {1: 0, 2: 3, 3: 0}


def make_test_model() -> CacheAwareCausalLM:
    """vocab 16, context 32, 2 layers, 4 heads; PyTorch's default init under a fixed seed."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(TEST_SEED)
        model = CacheAwareCausalLM(TEST_CONFIG)
    return model.eval()


def make_eos_test_model() -> CacheAwareCausalLM:
    """Hand-set weights: the next token depends only on the current one (EOS_TRANSITIONS).

    From rows [[1], [2]] at positions [[0], [0]] with EOS 0, greedy gives
    [[1, 0], [2, 3, 0]], padded to [[1, 0, 0], [2, 3, 0]].

    How: token i embeds as the unit vector e_i and positions embed as zero; every
    attention and every later MLP adds nothing. The first block's MLP detects the
    current token (one hidden unit per token, biased so only the matching unit
    fires) and writes a large e_next(i) into the residual. The tied head then
    scores token j by (the normalised) residual component j.
    """
    config = TEST_CONFIG
    model = make_test_model()
    V, C = config.vocab_size, config.d_model
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.zero_()
        model.token_embedding.weight[:, :V] = torch.eye(V)
        for module in model.modules():
            if isinstance(module, nn.LayerNorm):
                module.weight.fill_(1.0)
        first_mlp = model.get_submodule("blocks.0.mlp")
        assert isinstance(first_mlp, MLP)
        # After LayerNorm, e_i has ~sqrt(C - 1) at coordinate i and ~-1/sqrt(C - 1) elsewhere.
        first_mlp.up_proj.weight[:V, :V] = torch.eye(V)
        first_mlp.up_proj.bias[:V] = -3.0
        for token in range(V):
            next_token = EOS_TRANSITIONS.get(token, EOS_TOKEN_ID)
            first_mlp.down_proj.weight[next_token, token] = 10.0
    assert C >= V
    return model.eval()
