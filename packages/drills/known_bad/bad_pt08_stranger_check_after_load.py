"""A stranger loads first and compares the checkpoint's two matrices afterwards: the error
names them, but the model was already overwritten."""

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
        self.head.weight = self.embedding.weight

    def forward(self, input_ids):
        x = self.embedding(input_ids)
        x = x + self.mlp(x)
        return self.head(self.norm(x))

    def load_state_dict(self, state_dict, strict=True, assign=False):
        result = super().load_state_dict(state_dict, strict=strict, assign=assign)
        if not torch.equal(state_dict["embedding.weight"], state_dict["head.weight"]):
            raise RuntimeError("checkpoint is untied: embedding.weight != head.weight")
        return result
