"""CacheAwareCausalLM: a GPT-2-shaped decoder whose rows carry their own cache state.

Same shape as tinygpt (multi-head attention with a fused biased ``qkv_proj``,
learned absolute positions, pre-norm LayerNorm blocks, exact-GELU MLP, tied LM
head), but every batch row has its own cache length and absolute position
origin, so one batch can mix requests with different cached prefixes.
"""

from __future__ import annotations

from torch import Tensor, nn

from tinygpt import ArgumentTypeError, GPTConfig

from .attention import AttentionKernel, grouped_query_attention, merge_heads, split_heads
from .cache_update import CacheWriter
from .decoder import CacheAwareDecoder
from .output import LayerKV


class CacheAwareAttention(nn.Module):
    """Multi-head attention in three steps: project K/V, write the cache, attend."""

    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        self.n_heads = config.n_heads
        self.qkv_proj = nn.Linear(config.d_model, 3 * config.d_model)
        self.out_proj = nn.Linear(config.d_model, config.d_model)

    def project_qkv(self, x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """[B, T, C] -> q, k, v each [B, H, T, D] (fused [q | k | v] layout)."""
        q, k, v = self.qkv_proj(x).chunk(3, dim=-1)
        H = self.n_heads
        return split_heads(q, H), split_heads(k, H), split_heads(v, H)

    def forward(
        self,
        x: Tensor,
        mask: Tensor,
        cache_writer: CacheWriter,
        layer_index: int,
        attend: AttentionKernel = grouped_query_attention,
    ) -> tuple[Tensor, LayerKV]:
        q, k, v = self.project_qkv(x)
        keys, values = cache_writer.write(layer_index, k, v)  # [B, H, S, D]
        y = attend(q, keys, values, mask)  # [B, H, T, D]
        return self.out_proj(merge_heads(y)), (keys, values)


class MLP(nn.Module):
    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        self.up_proj = nn.Linear(config.d_model, config.d_ff)
        self.down_proj = nn.Linear(config.d_ff, config.d_model)

    def forward(self, x: Tensor) -> Tensor:
        out: Tensor = self.down_proj(nn.functional.gelu(self.up_proj(x)))
        return out


class Block(nn.Module):
    """Pre-norm residual block: x + attention(norm(x)), then x + mlp(norm(x))."""

    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        self.attention_norm = nn.LayerNorm(config.d_model, eps=config.layer_norm_eps)
        self.attention = CacheAwareAttention(config)
        self.mlp_norm = nn.LayerNorm(config.d_model, eps=config.layer_norm_eps)
        self.mlp = MLP(config)

    def forward(
        self,
        x: Tensor,
        mask: Tensor,
        cache_writer: CacheWriter,
        layer_index: int,
        attend: AttentionKernel = grouped_query_attention,
    ) -> tuple[Tensor, LayerKV]:
        attended, layer_kv = self.attention(
            self.attention_norm(x), mask, cache_writer, layer_index, attend
        )
        x = x + attended
        return x + self.mlp(self.mlp_norm(x)), layer_kv


class CacheAwareCausalLM(CacheAwareDecoder):
    """The reference cache-aware model (see the package README for the contract).

    Inference-only: ``config.dropout`` must be 0.
    """

    config: GPTConfig

    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        if not isinstance(config, GPTConfig):
            raise ArgumentTypeError(
                f"config must be a tinygpt.GPTConfig, got {type(config).__name__}"
            )
        if config.dropout != 0.0:
            raise ValueError(f"CacheAwareCausalLM has no dropout; got dropout={config.dropout}")
        if config.gelu_approximate != "none":
            raise ValueError(
                "CacheAwareCausalLM runs the exact GELU, got "
                f"gelu_approximate={config.gelu_approximate!r}"
            )
        self.config = config
        self.n_kv_heads = config.n_heads  # every head keeps its own K/V
        self.token_embedding = nn.Embedding(config.vocab_size, config.d_model)
        self.position_embedding = nn.Embedding(config.context_length, config.d_model)
        self.blocks = nn.ModuleList(Block(config) for _ in range(config.n_layers))
        self.final_norm = nn.LayerNorm(config.d_model, eps=config.layer_norm_eps)
        self.lm_head = nn.Linear(config.d_model, config.vocab_size, bias=False)
        self.lm_head.weight = self.token_embedding.weight  # tied: one Parameter

    def embed(self, input_ids: Tensor, positions: Tensor) -> Tensor:
        """Token plus learned absolute-position embeddings, [B, T, C]."""
        embedded: Tensor = self.token_embedding(input_ids) + self.position_embedding(positions)
        return embedded


__all__ = ["CacheAwareCausalLM"]
