"""A stranger's PT08 repair from the README alone: the embedding takes the head's Parameter
(the other direction), and a load-state-dict pre-hook refuses an untied checkpoint."""

import torch
from torch import nn

VARIABLE = "DRILL_PT08_MODULE"


class TiedLM(nn.Module):
    def __init__(self, vocab_size, d_model, hidden):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, d_model)
        self.mlp = nn.Sequential(nn.Linear(d_model, hidden), nn.GELU(), nn.Linear(hidden, d_model))
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab_size, bias=False)
        nn.init.normal_(self.head.weight)  # an embedding's init
        self.embedding.weight = self.head.weight
        self.register_load_state_dict_pre_hook(self._refuse_untied)

    @staticmethod
    def _refuse_untied(module, state_dict, prefix, *_):
        a, b = state_dict.get(prefix + "embedding.weight"), state_dict.get(prefix + "head.weight")
        if a is not None and b is not None and (a.shape != b.shape or not torch.equal(a, b)):
            raise RuntimeError(
                f"untied checkpoint: {prefix}embedding.weight != {prefix}head.weight; this model "
                "ties them, so make them one matrix in the checkpoint first"
            )

    def forward(self, input_ids):
        h = self.embedding(input_ids)
        return self.head(self.norm(h + self.mlp(h)))
