"""LM head not tied: equal values at construction, but two separate Parameters."""

from __future__ import annotations

from torch import nn

import tinygpt
from gptlab_testkit.mutants import export_with
from tinygpt import GPTConfig

VARIABLE = "TINY_GPT_MODULE"
EXPECTED_OWNER = "tying"


class UntiedHeadGPT(tinygpt.TinyGPT):
    def __init__(self, config: GPTConfig) -> None:
        super().__init__(config)
        self.lm_head.weight = nn.Parameter(self.token_embedding.weight.detach().clone())


globals().update(export_with("tinygpt", TinyGPT=UntiedHeadGPT))
