"""-100 labels scored: ignored positions are clamped to token 0 and counted in the mean."""

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
        targets = labels[:, 1:].clamp(min=0)  # "make the labels valid indices"
        loss = F.cross_entropy(output.logits[:, :-1].reshape(-1, V), targets.reshape(-1))
        return dataclasses.replace(output, loss=loss)


__all__ = ["CausalLMOutput", "GPTConfig", "TinyGPT"]
