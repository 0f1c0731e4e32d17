"""One fragment layer: RMSNorm, RoPE-GQA over a cache writer, residual, RMSNorm, top-k MoE,
residual.

    input_layernorm            modern_lm.RMSNorm [C]
    self_attn.{q,k,v,o}_proj   modern_lm.GroupedQueryAttention's projections (bias-free)
    post_attention_layernorm   modern_lm.RMSNorm [C]
    mlp                        moe_lm.SparseMoE: gate [E, C], experts.e.{gate,up,down}_proj

The attention reuses M02's projections and rotary; what it adds is M03's step: the new
keys and values go through the forward's ``CacheWriter`` (cache_aware_lm's slot rule), and
queries attend over every slot the absolute-position mask allows.
"""

from __future__ import annotations

from moe_lm import MoEOutput, SparseMoE
from torch import Tensor, nn

from cache_aware_lm import CacheWriter, LayerKV, grouped_query_attention
from modern_lm import GroupedQueryAttention, RMSNorm, apply_rotary

from .config import FragmentConfig


class CachedAttention(GroupedQueryAttention):
    """M02's grouped-query attention, its K/V stored and read through a cache writer."""

    def forward_cached(
        self,
        x: Tensor,
        rotary: tuple[Tensor, Tensor],
        mask: Tensor,
        writer: CacheWriter,
        layer_index: int,
    ) -> tuple[Tensor, LayerKV]:
        """x [B, T, C] -> ([B, T, C], the layer's keys and values [B, H_kv, S, D])."""
        B, T, _ = x.shape
        cos, sin = rotary
        q = apply_rotary(self._heads(self.q_proj(x), self.n_heads), cos, sin)
        k = apply_rotary(self._heads(self.k_proj(x), self.n_kv_heads), cos, sin)
        v = self._heads(self.v_proj(x), self.n_kv_heads)  # values carry no position
        keys, values = writer.write(layer_index, k, v)
        y = grouped_query_attention(q, keys, values, mask)  # [B, H, T, D]
        out: Tensor = self.o_proj(y.transpose(1, 2).reshape(B, T, self.n_heads * self.head_dim))
        return out, (keys, values)


class FragmentLayer(nn.Module):
    """Pre-norm residual block whose feed-forward is a sparse mixture of experts."""

    def __init__(self, config: FragmentConfig) -> None:
        super().__init__()
        self.input_layernorm = RMSNorm(config.hidden_size, config.rms_norm_eps)
        self.self_attn = CachedAttention(config)
        self.post_attention_layernorm = RMSNorm(config.hidden_size, config.rms_norm_eps)
        self.mlp = SparseMoE(
            config.hidden_size,
            config.intermediate_size,
            config.num_experts,
            config.experts_per_token,
        )

    def forward(
        self,
        x: Tensor,
        rotary: tuple[Tensor, Tensor],
        mask: Tensor,
        writer: CacheWriter,
        layer_index: int,
    ) -> tuple[Tensor, LayerKV, MoEOutput]:
        attended, layer_kv = self.self_attn.forward_cached(
            self.input_layernorm(x), rotary, mask, writer, layer_index
        )
        x = x + attended
        mixed: MoEOutput = self.mlp(self.post_attention_layernorm(x))
        return x + mixed.hidden_states, layer_kv, mixed


__all__ = ["CachedAttention", "FragmentLayer"]
