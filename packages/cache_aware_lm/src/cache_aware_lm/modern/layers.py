"""The modern block: grouped-query attention over a cache, with modern_lm's RMSNorm and SwiGLU."""

from __future__ import annotations

from torch import Tensor, nn

from modern_lm import RMSNorm, SwiGLU, apply_rotary
from tinygpt import ArgumentTypeError

from ..attention import AttentionKernel, grouped_query_attention, merge_heads, split_heads
from ..cache_update import CacheWriter
from ..output import LayerKV
from .config import ModernConfig


def check_config(config: object) -> None:
    if not isinstance(config, ModernConfig):
        raise ArgumentTypeError(f"config must be a ModernConfig, got {type(config).__name__}")


class GroupedQueryAttention(nn.Module):
    """Project q (H heads) and k, v (H_kv heads), rotate q and k, write the cache, attend.

    The cache holds the rotated keys and the values of the H_kv heads only:
    ``[B, H_kv, S, D]``; they are repeated per query group just before attention.
    """

    def __init__(self, config: ModernConfig) -> None:
        super().__init__()
        check_config(config)
        self.n_heads = config.n_heads
        self.n_kv_heads = config.n_kv_heads
        kv_width = config.n_kv_heads * config.head_dim
        self.q_proj = nn.Linear(config.d_model, config.d_model, bias=False)
        self.k_proj = nn.Linear(config.d_model, kv_width, bias=False)
        self.v_proj = nn.Linear(config.d_model, kv_width, bias=False)
        self.out_proj = nn.Linear(config.d_model, config.d_model, bias=False)

    def project_qkv(self, x: Tensor, cos: Tensor, sin: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """[B, T, C] -> q [B, H, T, D], k and v [B, H_kv, T, D]; q and k rotated."""
        q = apply_rotary(split_heads(self.q_proj(x), self.n_heads), cos, sin)
        k = apply_rotary(split_heads(self.k_proj(x), self.n_kv_heads), cos, sin)
        v = split_heads(self.v_proj(x), self.n_kv_heads)
        return q, k, v

    def forward(
        self,
        x: Tensor,
        rotary: tuple[Tensor, Tensor],
        mask: Tensor,
        cache_writer: CacheWriter,
        layer_index: int,
        attend: AttentionKernel = grouped_query_attention,
    ) -> tuple[Tensor, LayerKV]:
        q, k, v = self.project_qkv(x, *rotary)
        keys, values = cache_writer.write(layer_index, k, v)  # [B, H_kv, S, D]
        y = attend(q, keys, values, mask)  # [B, H, T, D]
        return self.out_proj(merge_heads(y)), (keys, values)


class ModernBlock(nn.Module):
    """Pre-norm residual block with RMSNorm, grouped-query attention and SwiGLU."""

    def __init__(self, config: ModernConfig) -> None:
        super().__init__()
        check_config(config)
        self.attention_norm = RMSNorm(config.d_model, config.rms_norm_eps)
        self.attention = GroupedQueryAttention(config)
        self.mlp_norm = RMSNorm(config.d_model, config.rms_norm_eps)
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
        attended, layer_kv = self.attention(
            self.attention_norm(x), rotary, mask, cache_writer, layer_index, attend
        )
        x = x + attended
        return x + self.mlp(self.mlp_norm(x)), layer_kv
