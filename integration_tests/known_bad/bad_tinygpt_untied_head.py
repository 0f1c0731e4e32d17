"""LM head not tied: equal values at construction, but two separate Parameters."""

from __future__ import annotations

from torch import nn

import tinygpt
from tinygpt import CausalLMOutput, GPTConfig

VARIABLE = "TINY_GPT_MODULE"
EXPECTED_OWNER = "tying"


class TinyGPT(tinygpt.TinyGPT):
    def __init__(self, config: GPTConfig) -> None:
        super().__init__(config)
        self.lm_head.weight = nn.Parameter(self.token_embedding.weight.detach().clone())


__all__ = ["CausalLMOutput", "GPTConfig", "TinyGPT"]
