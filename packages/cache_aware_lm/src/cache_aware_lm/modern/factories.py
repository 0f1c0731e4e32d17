"""Deterministic test models for the modern variant (the graded factories)."""

from __future__ import annotations

import torch
from torch import nn

from ..factories import EOS_TOKEN_ID, EOS_TRANSITIONS
from .config import ModernConfig
from .model import ModernCacheAwareLM

TEST_CONFIG = ModernConfig(
    vocab_size=16, context_length=32, d_model=32, n_layers=2, n_heads=4, n_kv_heads=2, d_ff=64
)
TEST_SEED = 4321


def make_test_model() -> ModernCacheAwareLM:
    """vocab 16, context 32, 2 layers, 4 query / 2 key-value heads; seeded default init."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(TEST_SEED)
        model = ModernCacheAwareLM(TEST_CONFIG)
    return model.eval()


def make_eos_test_model() -> ModernCacheAwareLM:
    """Hand-set weights: the next token depends only on the current one (EOS_TRANSITIONS).

    Token i embeds as e_i; every attention and MLP output projection is zero, so the
    residual stays e_i and the final RMSNorm scales it to sqrt(C) * e_i. The untied
    head row of token j reads coordinate i exactly when j is i's successor.
    """
    model = make_test_model()
    V = TEST_CONFIG.vocab_size
    with torch.no_grad():
        model.token_embedding.weight.zero_()
        model.token_embedding.weight[:, :V] = torch.eye(V)
        for index in range(TEST_CONFIG.n_layers):
            for name in ("attention.out_proj", "mlp.down_proj"):
                projection = model.get_submodule(f"blocks.{index}.{name}")
                assert isinstance(projection, nn.Linear)
                projection.weight.zero_()
        model.lm_head.weight.zero_()
        for token in range(V):
            model.lm_head.weight[EOS_TRANSITIONS.get(token, EOS_TOKEN_ID), token] = 1.0
    return model.eval()
