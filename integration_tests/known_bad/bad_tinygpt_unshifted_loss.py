"""Loss without the shift: logits at t are scored against labels at t (the current token)."""

from __future__ import annotations

import dataclasses

import torch.nn.functional as F
from torch import Tensor

import tinygpt
from tinygpt import CausalLMOutput, GPTConfig, PastKeyValues

VARIABLE = "TINY_GPT_MODULE"
EXPECTED_OWNER = "loss_shift"


class TinyGPT(tinygpt.TinyGPT):
    def forward(
        self,
        input_ids: Tensor,
        labels: Tensor | None = None,
        past_key_values: PastKeyValues | None = None,
        use_cache: bool = False,
    ) -> CausalLMOutput:
        output = super().forward(input_ids, None, past_key_values, use_cache)
        if labels is None:
            return output
        V = output.logits.size(-1)
        loss = F.cross_entropy(output.logits.reshape(-1, V), labels.reshape(-1), ignore_index=-100)
        return dataclasses.replace(output, loss=loss)


__all__ = ["CausalLMOutput", "GPTConfig", "TinyGPT"]
