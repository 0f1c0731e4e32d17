"""Causal grouped-query self-attention with RoPE on queries and keys."""

from __future__ import annotations

from torch import Tensor, nn
from torch.nn import functional

from .checks import ArgumentTypeError, check_features, check_size
from .config import ModernLMConfig
from .rotary import apply_rotary


def repeat_kv(x: Tensor, group_size: int) -> Tensor:
    """[B, H_kv, T, D] -> [B, H_kv * G, T, D]: query head h reads key/value head h // G.

    ``repeat_interleave``, not ``repeat``: ``repeat`` would give query head h the
    key/value head h % H_kv, pairing each query head with another group's keys.
    """
    if not isinstance(x, Tensor):
        raise ArgumentTypeError(f"x must be a Tensor, got {type(x).__name__}")
    if x.dim() != 4:
        raise ValueError(f"x must be [B, H_kv, T, D], got {tuple(x.shape)}")
    check_size("group_size", group_size)
    return x if group_size == 1 else x.repeat_interleave(group_size, dim=1)


class GroupedQueryAttention(nn.Module):
    """q: H query heads; k, v: H_kv heads repeated per group; bias-free projections."""

    def __init__(self, config: ModernLMConfig) -> None:
        super().__init__()
        config = ModernLMConfig.checked(config)
        self.n_heads = config.num_attention_heads
        self.n_kv_heads = config.num_key_value_heads
        self.head_dim = config.head_dim
        self.dropout = config.dropout
        C, D = config.hidden_size, config.head_dim
        self.q_proj = nn.Linear(C, self.n_heads * D, bias=False)
        self.k_proj = nn.Linear(C, self.n_kv_heads * D, bias=False)
        self.v_proj = nn.Linear(C, self.n_kv_heads * D, bias=False)
        self.o_proj = nn.Linear(self.n_heads * D, C, bias=False)

    def _heads(self, x: Tensor, n_heads: int) -> Tensor:
        """[B, T, n*D] -> [B, n, T, D]."""
        B, T, _ = x.shape
        return x.view(B, T, n_heads, self.head_dim).transpose(1, 2)

    def forward(self, x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
        """x [B, T, C], (cos, sin) [B, 1, T, D] -> [B, T, C]."""
        check_features("x", x, self.q_proj.in_features)
        if x.dim() != 3:
            raise ValueError(f"x must be [B, T, C], got {tuple(x.shape)}")
        B, T, _ = x.shape
        q = apply_rotary(self._heads(self.q_proj(x), self.n_heads), cos, sin)
        k = apply_rotary(self._heads(self.k_proj(x), self.n_kv_heads), cos, sin)
        v = self._heads(self.v_proj(x), self.n_kv_heads)  # values carry no position
        group = self.n_heads // self.n_kv_heads
        y = functional.scaled_dot_product_attention(
            q,
            repeat_kv(k, group),
            repeat_kv(v, group),
            is_causal=True,
            dropout_p=self.dropout if self.training else 0.0,
        )
        out: Tensor = self.o_proj(y.transpose(1, 2).reshape(B, T, self.n_heads * self.head_dim))
        return out


__all__ = ["GroupedQueryAttention", "repeat_kv"]
