"""Causal multi-head self-attention over a functional K/V cache.

Shape ledger: hidden [B, T, C] -> q, k, v [B, H, T, D] -> (with the past) k, v
[B, H, P+T, D] -> attention [B, H, T, D] -> merged [B, T, C].
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .config import GPTConfig

LayerKV = tuple[Tensor, Tensor]
"""One block's (key, value), each [B, H, S, D]."""

PastKeyValues = tuple[LayerKV, ...]
"""One LayerKV per decoder block, all sharing S."""


class CausalSelfAttention(nn.Module):
    """Multi-head attention whose queries sit after ``past_length`` cached keys."""

    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        self.n_heads = config.n_heads
        self.head_dim = config.head_dim
        # One fused projection laid out [q | k | v]; each third is split into heads contiguously.
        self.qkv_proj = nn.Linear(config.d_model, 3 * config.d_model)
        self.out_proj = nn.Linear(config.d_model, config.d_model)
        self.attention_dropout_p = config.dropout
        self.residual_dropout = nn.Dropout(config.dropout)

    def forward(
        self, hidden_states: Tensor, past_key_value: LayerKV | None = None
    ) -> tuple[Tensor, LayerKV]:
        T = hidden_states.size(1)
        q, k, v = self.split_heads(self.qkv_proj(hidden_states))  # each [B, H, T, D]
        if past_key_value is not None:
            past_key, past_value = past_key_value
            # torch.cat allocates: the caller's cache is read, never written or aliased.
            k = torch.cat((past_key, k), dim=2)  # [B, H, P+T, D]
            v = torch.cat((past_value, v), dim=2)
        else:
            # The returned cache owns its memory: not views into the fused qkv output.
            k, v = k.clone(), v.clone()
        mask = self.causal_mask(k.size(2) - T, T, hidden_states.device)  # [T, P+T]
        # SDPA knows nothing of module mode: dropout must be switched off by hand in eval.
        dropout_p = self.attention_dropout_p if self.training else 0.0
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout_p)
        output = self.residual_dropout(self.out_proj(self.merge_heads(y)))
        return output, (k, v)

    def split_heads(self, qkv: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """[B, T, 3C] -> three [B, H, T, D] (transpose before heads meet time)."""
        B, T, _ = qkv.shape
        qkv = qkv.view(B, T, 3, self.n_heads, self.head_dim)
        q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)
        return q, k, v

    def merge_heads(self, y: Tensor) -> Tensor:
        """[B, H, T, D] -> [B, T, C]."""
        B, H, T, D = y.shape
        return y.transpose(1, 2).reshape(B, T, H * D)

    @staticmethod
    def causal_mask(past_length: int, query_length: int, device: torch.device) -> Tensor:
        """Boolean [T, P+T], True = may attend: M[i, j] = j <= P + i (absolute positions).

        Anchoring at the lower right (not the upper left) is what makes a multi-token
        chunk after a cache exact.
        """
        query_positions = torch.arange(query_length, device=device) + past_length
        key_positions = torch.arange(past_length + query_length, device=device)
        return key_positions[None, :] <= query_positions[:, None]


__all__ = ["CausalSelfAttention", "LayerKV", "PastKeyValues"]
