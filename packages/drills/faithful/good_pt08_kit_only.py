"""A stranger's PT08 from the kit's words alone: the embedding's Parameter given to the head
(one object, one storage), and load_state_dict refusing, before any write, a checkpoint whose
two copies of the matrix differ (the one rejection the kit names)."""

import torch
from torch import nn

VARIABLE = "DRILL_PT08_MODULE"

TIED = ("embedding.weight", "head.weight")


class TiedLM(nn.Module):
    def __init__(self, vocab_size, d_model, hidden):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, d_model)
        self.mlp = nn.Sequential(nn.Linear(d_model, hidden), nn.GELU(), nn.Linear(hidden, d_model))
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab_size, bias=False)
        self.head.weight = self.embedding.weight

    def load_state_dict(self, state_dict, strict=True, assign=False):
        first, second = (state_dict.get(name) for name in TIED)
        if first is not None and second is not None and not torch.equal(first, second):
            raise ValueError(
                f"checkpoint's {TIED[0]} and {TIED[1]} differ: this model ties them, "
                "so it cannot load an untied checkpoint"
            )
        return super().load_state_dict(state_dict, strict=strict, assign=assign)

    def forward(self, input_ids):
        x = self.embedding(input_ids)
        return self.head(self.norm(x + self.mlp(x)))
