"""The pre-norm decoder block: x + attention(norm(x)), then x + mlp(norm(x))."""

from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor, nn

from .attention import CausalSelfAttention, LayerKV
from .config import GPTConfig


class MLP(nn.Module):
    """[B, T, C] -> [B, T, F] -> GELU -> [B, T, C]; exact (erf) GELU unless the config says tanh."""

    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        self.up_proj = nn.Linear(config.d_model, config.d_ff)
        self.down_proj = nn.Linear(config.d_ff, config.d_model)
        self.dropout = nn.Dropout(config.dropout)
        self.gelu_approximate = config.gelu_approximate

    def forward(self, x: Tensor) -> Tensor:
        hidden = F.gelu(self.up_proj(x), approximate=self.gelu_approximate)  # [B, T, F]
        output: Tensor = self.dropout(self.down_proj(hidden))
        return output


class Block(nn.Module):
    """One decoder layer; returns its output and the layer's K/V including the past."""

    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        self.attention_norm = nn.LayerNorm(config.d_model, eps=config.layer_norm_eps)
        self.attention = CausalSelfAttention(config)
        self.mlp_norm = nn.LayerNorm(config.d_model, eps=config.layer_norm_eps)
        self.mlp = MLP(config)

    def forward(self, x: Tensor, past_key_value: LayerKV | None = None) -> tuple[Tensor, LayerKV]:
        attended, key_value = self.attention(self.attention_norm(x), past_key_value)
        x = x + attended
        x = x + self.mlp(self.mlp_norm(x))
        return x, key_value


__all__ = ["MLP", "Block"]
