"""ModernCacheAwareLM: the cache-aware contract on a Llama-shaped decoder.

Grouped-query attention (the cache holds only the n_kv_heads key/value heads),
rotary positions taken from the absolute ``positions`` (no position table),
RMSNorm, SwiGLU. The LM head is untied from the token embedding, as in most
grouped-query models (Llama 2/3, Mistral); it also lets the EOS test model set
its transition table directly in ``lm_head``.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from modern_lm import RMSNorm, RotaryEmbedding
from tinygpt import ArgumentTypeError

from ..decoder import CacheAwareDecoder
from .config import ModernConfig
from .layers import ModernBlock


class ModernCacheAwareLM(CacheAwareDecoder):
    """Same forward / generate contract as ``CacheAwareCausalLM``; K/V are [B, H_kv, S, D]."""

    config: ModernConfig

    def __init__(self, config: ModernConfig) -> None:
        super().__init__()
        if not isinstance(config, ModernConfig):
            raise ArgumentTypeError(f"config must be a ModernConfig, got {type(config).__name__}")
        self.config = config
        self.n_kv_heads = config.n_kv_heads
        self.token_embedding = nn.Embedding(config.vocab_size, config.d_model)
        self.rotary = RotaryEmbedding(config.head_dim, config.rope_theta)
        self.blocks = nn.ModuleList(ModernBlock(config) for _ in range(config.n_layers))
        self.final_norm = RMSNorm(config.d_model, config.rms_norm_eps)
        self.lm_head = nn.Linear(config.d_model, config.vocab_size, bias=False)

    def embed(self, input_ids: Tensor, positions: Tensor) -> Tensor:
        """Token embeddings only, [B, T, C]: positions enter through the rotary angles."""
        embedded: Tensor = self.token_embedding(input_ids)
        return embedded

    def position_inputs(self, positions: Tensor, dtype: torch.dtype) -> tuple[object, ...]:
        """The rotary (cos, sin): once per forward, shared by every layer."""
        return (self.rotary(positions, dtype),)
