"""A stranger's PT06 repair from the README alone: the stack becomes an nn.Sequential (its
layers take one argument), add_layer appends through it, forward calls the Sequential."""

import math

import torch
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

    def forward(self, x):
        B, T, C = x.shape
        D = C // self.n_heads
        q, k, v = self.qkv(self.attention_norm(x)).view(B, T, 3, self.n_heads, D).unbind(2)
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))
        scores = q @ k.transpose(-1, -2) / math.sqrt(D)
        future = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)
        weights = scores.masked_fill(future, float("-inf")).softmax(-1)
        x = x + self.dropout(self.out((weights @ v).transpose(1, 2).reshape(B, T, C)))
        return x + self.dropout(self.mlp(self.mlp_norm(x)))


class TinyDecoder(nn.Module):
    def __init__(self, vocab_size, d_model, n_heads, n_layers, dropout=0.0):
        super().__init__()
        self.config = (d_model, n_heads, dropout)
        self.embedding = nn.Embedding(vocab_size, d_model)
        self.layers = nn.Sequential(*[DecoderLayer(*self.config) for _ in range(n_layers)])
        self.final_norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab_size, bias=False)

    def add_layer(self):
        self.layers.append(DecoderLayer(*self.config).to(self.head.weight))

    def forward(self, input_ids):
        return self.head(self.final_norm(self.layers(self.embedding(input_ids))))
