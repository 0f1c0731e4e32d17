"""PT06 reference: the supplied decoder, repaired. Its layers live in an nn.ModuleList.

TinyDecoder(vocab_size, d_model, n_heads, n_layers, dropout=0.0): token embedding, a stack
of pre-norm decoder layers (causal self-attention, then an MLP), a final LayerNorm and a
bias-free head. forward(input_ids [B, T] long) -> logits [B, T, vocab_size].
add_layer() appends one more freshly initialised layer to the top of the stack.
"""

from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor, nn


class DecoderLayer(nn.Module):
    def __init__(self, d_model: int, n_heads: int, dropout: float) -> None:
        super().__init__()
        self.n_heads = n_heads
        self.attention_norm = nn.LayerNorm(d_model)
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out = nn.Linear(d_model, d_model)
        self.mlp_norm = nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(
            nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model)
        )
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: Tensor) -> Tensor:
        B, T, C = x.shape
        q, k, v = self.qkv(self.attention_norm(x)).split(C, dim=-1)
        q, k, v = (t.view(B, T, self.n_heads, C // self.n_heads).transpose(1, 2) for t in (q, k, v))
        attended = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.dropout(self.out(attended.transpose(1, 2).reshape(B, T, C)))
        out: Tensor = x + self.dropout(self.mlp(self.mlp_norm(x)))
        return out


class TinyDecoder(nn.Module):
    def __init__(
        self, vocab_size: int, d_model: int, n_heads: int, n_layers: int, dropout: float = 0.0
    ) -> None:
        super().__init__()
        self.d_model, self.n_heads, self.dropout = d_model, n_heads, dropout
        self.embedding = nn.Embedding(vocab_size, d_model)
        # A plain list hides the layers from named_parameters, state_dict, .to() and
        # .train()/.eval(): nn.ModuleList registers each one under "layers.<i>".
        self.layers = nn.ModuleList(
            DecoderLayer(d_model, n_heads, dropout) for _ in range(n_layers)
        )
        self.final_norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab_size, bias=False)

    def add_layer(self) -> None:
        self.layers.append(DecoderLayer(self.d_model, self.n_heads, self.dropout))

    def forward(self, input_ids: Tensor) -> Tensor:
        x = self.embedding(input_ids)
        for layer in self.layers:
            x = layer(x)
        logits: Tensor = self.head(self.final_norm(x))
        return logits


__all__ = ["DecoderLayer", "TinyDecoder"]
