"""A stranger keeps two Parameters and copies the embedding into the head at every forward:
equal logits, but no shared object, no shared storage, and a write to the head is lost."""

import torch
from torch import nn

VARIABLE = "DRILL_PT08_MODULE"
EXPECTED_OWNER = "pt08"


class TiedLM(nn.Module):
    def __init__(self, vocab_size, d_model, hidden):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, d_model)
        self.mlp = nn.Sequential(nn.Linear(d_model, hidden), nn.GELU(), nn.Linear(hidden, d_model))
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab_size, bias=False)

    def forward(self, input_ids):
        with torch.no_grad():
            self.head.weight.copy_(self.embedding.weight)
        x = self.embedding(input_ids)
        x = x + self.mlp(x)
        return self.head(self.norm(x))

    def load_state_dict(self, state_dict, strict=True, assign=False):
        if not torch.equal(state_dict["embedding.weight"], state_dict["head.weight"]):
            raise ValueError("embedding.weight and head.weight differ in this checkpoint")
        return super().load_state_dict(state_dict, strict=strict, assign=assign)
