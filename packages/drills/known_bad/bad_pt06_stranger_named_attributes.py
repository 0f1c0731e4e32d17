"""A stranger registers each layer as its own attribute (`layer0`, `layer1`, ...) and keeps the
plain list for forward: checkpoint paths are not `layers.<i>` and add_layer registers nothing."""

import torch.nn.functional as F
from torch import nn

VARIABLE = "DRILL_PT06_MODULE"
EXPECTED_OWNER = "pt06"


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
        q, k, v = self.qkv(self.attention_norm(x)).split(C, dim=-1)
        q, k, v = (t.view(B, T, self.n_heads, C // self.n_heads).transpose(1, 2) for t in (q, k, v))
        attended = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.dropout(self.out(attended.transpose(1, 2).reshape(B, T, C)))
        return x + self.dropout(self.mlp(self.mlp_norm(x)))


class TinyDecoder(nn.Module):
    def __init__(self, vocab_size, d_model, n_heads, n_layers, dropout=0.0):
        super().__init__()
        self.d_model, self.n_heads, self.dropout = d_model, n_heads, dropout
        self.embedding = nn.Embedding(vocab_size, d_model)
        self.layers = [DecoderLayer(d_model, n_heads, dropout) for _ in range(n_layers)]
        for i, layer in enumerate(self.layers):
            setattr(self, f"layer{i}", layer)  # registered now
        self.final_norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab_size, bias=False)

    def add_layer(self):
        self.layers.append(DecoderLayer(self.d_model, self.n_heads, self.dropout))

    def forward(self, input_ids):
        x = self.embedding(input_ids)
        for layer in self.layers:
            x = layer(x)
        return self.head(self.final_norm(x))
