"""MLP uses the tanh-approximate GELU (GPT-2's) where the contract asks for the exact erf GELU."""

from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor

import tinygpt
from tinygpt import CausalLMOutput, GPTConfig
from tinygpt.blocks import MLP

VARIABLE = "TINY_GPT_MODULE"
EXPECTED_OWNER = "decoder_forward"


class TanhGeluMLP(MLP):
    def forward(self, x: Tensor) -> Tensor:
        output: Tensor = self.dropout(self.down_proj(F.gelu(self.up_proj(x), approximate="tanh")))
        return output


class TinyGPT(tinygpt.TinyGPT):
    def __init__(self, config: GPTConfig) -> None:
        super().__init__(config)
        for block in self.blocks:
            block.mlp.__class__ = TanhGeluMLP


__all__ = ["CausalLMOutput", "GPTConfig", "TinyGPT"]
