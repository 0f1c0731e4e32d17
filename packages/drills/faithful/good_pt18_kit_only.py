"""A stranger's PT18 repair of the supplied artifact, from the kit's words alone: positions
are torch.where(mask, running count - 1, 0); pads are kept out of attention by an additive
float bias (the dtype's lowest value, so a pad query's row stays finite instead of empty);
a row of padding only is rejected with a message naming the mask. Nothing else validated."""

from __future__ import annotations

VARIABLE = "DRILL_PT18_MODULE"

import torch
import torch.nn.functional as F
from torch import Tensor, nn


def position_ids_from_mask(attention_mask: Tensor) -> Tensor:
    real = attention_mask != 0
    if not bool(real.any(dim=1).all()):
        raise ValueError(f"attention_mask {attention_mask.tolist()} has a row without a token")
    count = real.to(torch.int64).cumsum(dim=1) - 1
    return torch.where(real, count, torch.zeros_like(count))


def rotate(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    """Rotate-half RoPE: x [B, H, T, D], cos/sin [B, 1, T, D/2]."""
    first, second = x.chunk(2, dim=-1)
    return torch.cat((first * cos - second * sin, second * cos + first * sin), dim=-1)


class RotaryAttention(nn.Module):
    def __init__(self, d_model: int, n_heads: int, max_positions: int) -> None:
        super().__init__()
        self.n_heads = n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out = nn.Linear(d_model, d_model)
        half = d_model // n_heads // 2
        frequencies = 10000.0 ** (-torch.arange(half, dtype=torch.float32) / half)
        angles = torch.arange(max_positions, dtype=torch.float32)[:, None] * frequencies
        self.register_buffer("cos_table", angles.cos(), persistent=False)  # [max_positions, D/2]
        self.register_buffer("sin_table", angles.sin(), persistent=False)

    def forward(self, x: Tensor, positions: Tensor, allowed: Tensor) -> Tensor:
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=-1)
        q, k, v = (t.view(B, T, self.n_heads, -1).transpose(1, 2) for t in (q, k, v))
        cos, sin = self.cos_table[positions][:, None], self.sin_table[positions][:, None]
        q, k = rotate(q, cos, sin), rotate(k, cos, sin)
        attended = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed)
        out: Tensor = self.out(attended.transpose(1, 2).reshape(B, T, C))
        return out


class Block(nn.Module):
    def __init__(self, d_model: int, n_heads: int, max_positions: int) -> None:
        super().__init__()
        self.attention_norm = nn.LayerNorm(d_model)
        self.attention = RotaryAttention(d_model, n_heads, max_positions)
        self.mlp_norm = nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(
            nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model)
        )

    def forward(self, x: Tensor, positions: Tensor, allowed: Tensor) -> Tensor:
        x = x + self.attention(self.attention_norm(x), positions, allowed)
        out: Tensor = x + self.mlp(self.mlp_norm(x))
        return out


class RotaryLM(nn.Module):
    def __init__(
        self, vocab_size: int, d_model: int, n_heads: int, n_layers: int, max_positions: int = 64
    ) -> None:
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, d_model)
        self.blocks = nn.ModuleList(Block(d_model, n_heads, max_positions) for _ in range(n_layers))
        self.final_norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab_size, bias=False)

    def hidden(self, input_ids: Tensor, attention_mask: Tensor) -> Tensor:
        positions = position_ids_from_mask(attention_mask)
        T = input_ids.shape[1]
        causal = torch.ones(T, T, dtype=torch.bool, device=input_ids.device).tril()
        keep = causal & (attention_mask != 0)[:, None, None, :]
        lowest = torch.finfo(self.embedding.weight.dtype).min
        allowed = torch.zeros(keep.shape, device=input_ids.device).masked_fill(~keep, lowest)
        x = self.embedding(input_ids)
        for block in self.blocks:
            x = block(x, positions, allowed)
        out: Tensor = self.final_norm(x)
        return out

    def forward(self, input_ids: Tensor, attention_mask: Tensor) -> Tensor:
        logits: Tensor = self.head(self.hidden(input_ids, attention_mask))
        return logits


__all__ = ["RotaryLM", "position_ids_from_mask"]
