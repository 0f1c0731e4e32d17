"""PT08 starting artifact: a small LM whose head should be tied to its embedding. Its tests fail.

TiedLM(vocab_size, d_model, hidden): token embedding, one residual MLP block, a LayerNorm and
a bias-free head whose weight is meant to be the embedding matrix itself.
forward(input_ids [B, T] long) -> logits [B, T, vocab_size].
"""

from __future__ import annotations

from torch import Tensor, nn


class TiedLM(nn.Module):
    def __init__(self, vocab_size: int, d_model: int, hidden: int) -> None:
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, d_model)
        self.mlp = nn.Sequential(nn.Linear(d_model, hidden), nn.GELU(), nn.Linear(hidden, d_model))
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab_size, bias=False)
        # Tie the head to the embedding.
        self.head.weight = nn.Parameter(self.embedding.weight.detach().clone())

    def forward(self, input_ids: Tensor) -> Tensor:
        x = self.embedding(input_ids)
        x = x + self.mlp(x)
        logits: Tensor = self.head(self.norm(x))
        return logits
