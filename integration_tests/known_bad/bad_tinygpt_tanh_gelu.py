"""MLP uses the tanh-approximate GELU (GPT-2's) where the contract asks for the exact erf GELU."""

from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor

import tinygpt
from gptlab_testkit.mutants import export_with, retyped_class
from tinygpt.blocks import MLP

VARIABLE = "TINY_GPT_MODULE"
EXPECTED_OWNER = "decoder_forward"


class TanhGeluMLP(MLP):
    def forward(self, x: Tensor) -> Tensor:
        output: Tensor = self.dropout(self.down_proj(F.gelu(self.up_proj(x), approximate="tanh")))
        return output


TinyGPT = retyped_class(tinygpt.TinyGPT, {MLP: TanhGeluMLP})
globals().update(export_with("tinygpt", TinyGPT=TinyGPT))
