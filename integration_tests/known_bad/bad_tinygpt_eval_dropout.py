"""Dropout active in eval: embedding dropout uses F.dropout, whose training flag defaults on."""

from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor, nn

import tinygpt
from gptlab_testkit.mutants import export_with
from tinygpt import GPTConfig

VARIABLE = "TINY_GPT_MODULE"
EXPECTED_OWNER = "eval_dropout"


class ModeBlindDropout(nn.Module):
    def __init__(self, p: float) -> None:
        super().__init__()
        self.p = p

    def forward(self, x: Tensor) -> Tensor:
        return F.dropout(x, self.p)  # training=True whatever the module mode


class ModeBlindDropoutGPT(tinygpt.TinyGPT):
    def __init__(self, config: GPTConfig) -> None:
        super().__init__(config)
        self.embedding_dropout = ModeBlindDropout(config.dropout)  # type: ignore[assignment]


globals().update(export_with("tinygpt", TinyGPT=ModeBlindDropoutGPT))
