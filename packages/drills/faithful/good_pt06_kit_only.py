"""A stranger's PT06 from the kit's words alone: the supplied layer kept (its names and its
math), the stack held in an nn.ModuleList so every layer is registered; no validation (the
repair adds none)."""

import torch.nn.functional as F
from torch import nn

VARIABLE = "DRILL_PT06_MODULE"


class DecoderLayer(nn.Module):
    def __init__(self, d_model, n_heads, dropout):
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

    def _heads(self, t):
        batch, tokens, width = t.shape
        return t.reshape(batch, tokens, self.n_heads, width // self.n_heads).transpose(1, 2)

    def forward(self, x):
        batch, tokens, width = x.shape
        q, k, v = map(self._heads, self.qkv(self.attention_norm(x)).chunk(3, dim=-1))
        attended = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        merged = attended.transpose(1, 2).reshape(batch, tokens, width)
        x = x + self.dropout(self.out(merged))
        return x + self.dropout(self.mlp(self.mlp_norm(x)))


class TinyDecoder(nn.Module):
    def __init__(self, vocab_size, d_model, n_heads, n_layers, dropout=0.0):
        super().__init__()
        self.d_model, self.n_heads, self.dropout = d_model, n_heads, dropout
        self.embedding = nn.Embedding(vocab_size, d_model)
        self.layers = nn.ModuleList(
            DecoderLayer(d_model, n_heads, dropout) for _ in range(n_layers)
        )
        self.final_norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab_size, bias=False)

    def add_layer(self):
        self.layers.append(DecoderLayer(self.d_model, self.n_heads, self.dropout))

    def forward(self, input_ids):
        x = self.embedding(input_ids)
        for layer in self.layers:
            x = layer(x)
        return self.head(self.final_norm(x))
