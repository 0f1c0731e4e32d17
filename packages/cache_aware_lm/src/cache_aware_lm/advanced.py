"""M03's advanced branch: the cache-aware contract on M02's own module tree.

``CacheAwareModernLM`` is ``modern_lm``'s model (M02) made cache-aware: the same
checkpoint names and shapes (``model.embed_tokens``, ``model.layers.N.self_attn.q_proj``,
..., ``model.norm``, ``lm_head``), so a state dict moves between it and
``modern_lm.ModernLM`` as it is, and the uncached logits are M02's. The cache holds the
rotated keys and the values of the K/V heads only, ``[B, H_kv, S, D]``, keys rotated at
their absolute positions. The forward flow, cache writer and mask are the shared
``CacheAwareDecoder``'s; the layers are M02's RMSNorm, RoPE and SwiGLU.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from modern_lm import RMSNorm, RotaryEmbedding, SwiGLU, apply_rotary
from tinygpt import ArgumentTypeError

from .attention import AttentionKernel, grouped_query_attention, merge_heads, split_heads
from .cache_update import CacheWriter
from .decoder import CacheAwareDecoder
from .factories import EOS_TOKEN_ID, EOS_TRANSITIONS
from .modern.config import ModernConfig
from .output import LayerKV

TEST_CONFIG = ModernConfig(
    vocab_size=16, context_length=32, d_model=32, n_layers=2, n_heads=4, n_kv_heads=2, d_ff=64
)
TEST_SEED = 2468


class SelfAttention(nn.Module):
    """M02's ``self_attn``: q (H heads), k and v (H_kv heads), ``o_proj``; q and k rotated."""

    def __init__(self, config: ModernConfig) -> None:
        super().__init__()
        self.n_heads = config.n_heads
        self.n_kv_heads = config.n_kv_heads
        kv_width = config.n_kv_heads * config.head_dim
        self.q_proj = nn.Linear(config.d_model, config.d_model, bias=False)
        self.k_proj = nn.Linear(config.d_model, kv_width, bias=False)
        self.v_proj = nn.Linear(config.d_model, kv_width, bias=False)
        self.o_proj = nn.Linear(config.d_model, config.d_model, bias=False)

    def forward(
        self,
        x: Tensor,
        rotary: tuple[Tensor, Tensor],
        mask: Tensor,
        cache_writer: CacheWriter,
        layer_index: int,
        attend: AttentionKernel = grouped_query_attention,
    ) -> tuple[Tensor, LayerKV]:
        cos, sin = rotary
        q = apply_rotary(split_heads(self.q_proj(x), self.n_heads), cos, sin)
        k = apply_rotary(split_heads(self.k_proj(x), self.n_kv_heads), cos, sin)
        v = split_heads(self.v_proj(x), self.n_kv_heads)
        keys, values = cache_writer.write(layer_index, k, v)  # [B, H_kv, S, D]
        return self.o_proj(merge_heads(attend(q, keys, values, mask))), (keys, values)


class DecoderLayer(nn.Module):
    """M02's pre-norm layer: ``input_layernorm``, ``self_attn``, ``post_attention_layernorm``,
    ``mlp``."""

    def __init__(self, config: ModernConfig) -> None:
        super().__init__()
        self.input_layernorm = RMSNorm(config.d_model, config.rms_norm_eps)
        self.self_attn = SelfAttention(config)
        self.post_attention_layernorm = RMSNorm(config.d_model, config.rms_norm_eps)
        self.mlp = SwiGLU(config.d_model, config.d_ff)

    def forward(
        self,
        x: Tensor,
        rotary: tuple[Tensor, Tensor],
        mask: Tensor,
        cache_writer: CacheWriter,
        layer_index: int,
        attend: AttentionKernel = grouped_query_attention,
    ) -> tuple[Tensor, LayerKV]:
        attended, layer_kv = self.self_attn(
            self.input_layernorm(x), rotary, mask, cache_writer, layer_index, attend
        )
        x = x + attended
        return x + self.mlp(self.post_attention_layernorm(x)), layer_kv


class Trunk(nn.Module):
    """M02's ``model.`` prefix: ``embed_tokens``, ``layers``, ``norm``."""

    def __init__(self, config: ModernConfig) -> None:
        super().__init__()
        self.embed_tokens = nn.Embedding(config.vocab_size, config.d_model)
        self.layers = nn.ModuleList(DecoderLayer(config) for _ in range(config.n_layers))
        self.norm = RMSNorm(config.d_model, config.rms_norm_eps)


class CacheAwareModernLM(CacheAwareDecoder):
    """The cache-aware forward / generate contract with M02's checkpoint names (untied head)."""

    config: ModernConfig

    def __init__(self, config: ModernConfig) -> None:
        super().__init__()
        if not isinstance(config, ModernConfig):
            raise ArgumentTypeError(f"config must be a ModernConfig, got {type(config).__name__}")
        self.config = config
        self.n_kv_heads = config.n_kv_heads
        self.model = Trunk(config)
        self.lm_head = nn.Linear(config.d_model, config.vocab_size, bias=False)
        # Its inverse frequencies are a non-persistent buffer: no checkpoint key.
        self.rotary = RotaryEmbedding(config.head_dim, config.rope_theta)

    # The shared flow's names for M02's parts (no second registration: one set of keys).
    @property
    def token_embedding(self) -> nn.Embedding:  # type: ignore[override]
        return self.model.embed_tokens

    @property
    def blocks(self) -> nn.ModuleList:  # type: ignore[override]
        return self.model.layers

    @property
    def final_norm(self) -> nn.Module:  # type: ignore[override]
        return self.model.norm

    def embed(self, input_ids: Tensor, positions: Tensor) -> Tensor:
        """Token embeddings only, [B, T, C]: positions enter through the rotary angles."""
        embedded: Tensor = self.model.embed_tokens(input_ids)
        return embedded

    def position_inputs(self, positions: Tensor, dtype: torch.dtype) -> tuple[object, ...]:
        """The rotary (cos, sin) at the absolute positions, shared by every layer."""
        return (self.rotary(positions, dtype),)


def make_test_model() -> CacheAwareModernLM:
    """vocab 16, context 32, 2 layers, 4 query / 2 key-value heads; seeded default init."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(TEST_SEED)
        model = CacheAwareModernLM(TEST_CONFIG)
    return model.eval()


def make_eos_test_model() -> CacheAwareModernLM:
    """Hand-set weights: the next token depends only on the current one (EOS_TRANSITIONS).

    Token i embeds as e_i; every ``o_proj`` and ``down_proj`` is zero, so the residual
    stays e_i and the final RMSNorm scales it to sqrt(C) * e_i; the head row of token j
    reads coordinate i exactly when j is i's successor.
    """
    model = make_test_model()
    V = TEST_CONFIG.vocab_size
    with torch.no_grad():
        model.model.embed_tokens.weight.zero_()
        model.model.embed_tokens.weight[:, :V] = torch.eye(V)
        for layer in model.model.layers:
            assert isinstance(layer, DecoderLayer)
            layer.self_attn.o_proj.weight.zero_()
            layer.mlp.down_proj.weight.zero_()
        model.lm_head.weight.zero_()
        for token in range(V):
            model.lm_head.weight[EOS_TRANSITIONS.get(token, EOS_TOKEN_ID), token] = 1.0
    return model.eval()


__all__ = ["CacheAwareModernLM", "make_eos_test_model", "make_test_model"]
