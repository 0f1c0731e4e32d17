"""PT08 reference: the supplied small LM, repaired. The head's weight *is* the embedding's.

TiedLM(vocab_size, d_model, hidden): token embedding, one residual MLP block, a LayerNorm and
a bias-free head whose weight is the embedding matrix itself (one Parameter, one storage).
forward(input_ids [B, T] long) -> logits [B, T, vocab_size].
load_state_dict refuses, before any write, a checkpoint whose two entries for the shared
matrix (`embedding.weight`, `head.weight`) differ (loading it would keep whichever came
last), and one with missing, unexpected or misshaped entries (torch copies the rest first).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from torch import Tensor, nn
from torch.nn.modules.module import _IncompatibleKeys

TIED = ("embedding.weight", "head.weight")


class TiedLM(nn.Module):
    def __init__(self, vocab_size: int, d_model: int, hidden: int) -> None:
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, d_model)
        self.mlp = nn.Sequential(nn.Linear(d_model, hidden), nn.GELU(), nn.Linear(hidden, d_model))
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab_size, bias=False)
        # The tie is one Parameter object in two places; a clone is two equal matrices that
        # drift apart at the first update, and counts (and saves) the matrix twice.
        self.head.weight = self.embedding.weight

    def forward(self, input_ids: Tensor) -> Tensor:
        x = self.embedding(input_ids)
        x = x + self.mlp(x)
        logits: Tensor = self.head(self.norm(x))
        return logits

    def load_state_dict(
        self, state_dict: Mapping[str, Any], strict: bool = True, assign: bool = False
    ) -> _IncompatibleKeys:
        _check_fit(self.state_dict(), state_dict, strict)
        embedding, head = (state_dict.get(key) for key in TIED)
        if isinstance(embedding, Tensor) and isinstance(head, Tensor):
            same = embedding.shape == head.shape and torch.equal(embedding, head.to(embedding))
            if not same:
                raise ValueError(
                    f"state_dict holds an untied checkpoint: {TIED[0]} and {TIED[1]} differ, but "
                    "this model shares one matrix; tie them (copy one into the other) before "
                    "loading, or load into an untied model"
                )
        result: _IncompatibleKeys = super().load_state_dict(state_dict, strict, assign)
        self.head.weight = self.embedding.weight  # assign=True swaps in two new Parameters
        return result


def _check_fit(own: Mapping[str, Tensor], state_dict: Mapping[str, Any], strict: bool) -> None:
    """Refuse, before any write, a checkpoint torch would refuse only after copying the rest."""
    missing = sorted(set(own) - set(state_dict)) if strict else []
    unexpected = sorted(set(state_dict) - set(own)) if strict else []
    misshaped = sorted(
        key
        for key in set(own) & set(state_dict)
        if not isinstance(state_dict[key], Tensor) or state_dict[key].shape != own[key].shape
    )
    if missing or unexpected or misshaped:
        raise ValueError(
            f"state_dict does not fit TiedLM: missing {missing}, unexpected {unexpected}, "
            f"misshaped or not tensors {misshaped}"
        )


__all__ = ["TiedLM"]
