"""PT18 reference: the supplied rotary model, repaired for left padding.

RotaryLM(vocab_size, d_model, n_heads, n_layers, max_positions=64): the artifact's model and
math. forward(input_ids [B, T], attention_mask [B, T] (1/True = real token, padding on the
left)) -> logits [B, T, vocab_size]; hidden(...) -> final normed states [B, T, d_model].

The repair: a physical column is not a logical position. position_ids_from_mask numbers
each row's real tokens 0, 1, ... (a running count of the mask, minus one) and gives every
pad position 0, a harmless index into the rotary table; a row with no real token is
rejected. Attention admits a key only if it is a real token at or before the query (a pad
query sees only itself, so no softmax row is empty and no NaN reaches a real token).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ._describe import described


def position_ids_from_mask(attention_mask: Tensor) -> Tensor:
    """[B, T] int64: real tokens numbered from 0 in each row, pads 0."""
    real = real_tokens(attention_mask)
    return (real.long().cumsum(-1) - 1).clamp(min=0)


def real_tokens(attention_mask: Tensor) -> Tensor:
    """The mask as bool, once it is known to be a 2-D 0/1 mask with a real token per row."""
    if not isinstance(attention_mask, Tensor) or attention_mask.dim() != 2:
        raise ValueError(
            f"attention_mask must be a 2-D tensor [B, T], got {described(attention_mask)}"
        )
    if attention_mask.is_floating_point() or bool(
        ((attention_mask != 0) & (attention_mask != 1)).any()
    ):
        raise ValueError(f"attention_mask must hold 0/1 or bool, got {described(attention_mask)}")
    real = attention_mask.bool()
    empty = (~real.any(-1)).nonzero().flatten().tolist()
    if empty:
        raise ValueError(f"attention_mask has rows of padding only: {empty}")
    return real


def rotate(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    """Rotate-half RoPE: x [B, H, T, D], cos/sin [B, 1, T, D/2]."""
    first, second = x.chunk(2, dim=-1)
    return torch.cat((first * cos - second * sin, second * cos + first * sin), dim=-1)


class RotaryAttention(nn.Module):
    cos_table: Tensor  # [max_positions, D/2] buffers, rebuilt at construction (not saved)
    sin_table: Tensor

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
        if attention_mask.shape != input_ids.shape:
            raise ValueError(f"attention_mask must match input_ids {tuple(input_ids.shape)}")
        T = input_ids.shape[1]
        causal = torch.ones(T, T, dtype=torch.bool, device=input_ids.device).tril()
        itself = torch.eye(T, dtype=torch.bool, device=input_ids.device)
        # [B, 1, T, T]: real keys at or before the query; a pad query keeps only itself
        allowed = causal & (attention_mask.bool()[:, None, None, :] | itself)
        x = self.embedding(input_ids)
        for block in self.blocks:
            x = block(x, positions, allowed)
        out: Tensor = self.final_norm(x)
        return out

    def forward(self, input_ids: Tensor, attention_mask: Tensor) -> Tensor:
        logits: Tensor = self.head(self.hidden(input_ids, attention_mask))
        return logits


__all__ = ["RotaryLM", "position_ids_from_mask", "real_tokens"]
