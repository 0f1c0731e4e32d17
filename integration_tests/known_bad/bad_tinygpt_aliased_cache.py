"""Caller's tensors returned aliased: the cache grows by rebinding past_key.data and returns it."""

from __future__ import annotations

from torch import Tensor

import tinygpt
from tinygpt import CausalLMOutput, GPTConfig, LayerKV
from tinygpt.attention import CausalSelfAttention

VARIABLE = "TINY_GPT_MODULE"
EXPECTED_OWNER = "cache_immutability"


class GrowInPlaceAttention(CausalSelfAttention):
    def forward(
        self, hidden_states: Tensor, past_key_value: LayerKV | None = None
    ) -> tuple[Tensor, LayerKV]:
        output, (key, value) = super().forward(hidden_states, past_key_value)
        if past_key_value is None:
            return output, (key, value)
        past_key, past_value = past_key_value
        past_key.data = key  # the caller's tensor objects now hold the grown cache
        past_value.data = value
        return output, (past_key, past_value)


class TinyGPT(tinygpt.TinyGPT):
    def __init__(self, config: GPTConfig) -> None:
        super().__init__(config)
        for block in self.blocks:
            block.attention.__class__ = GrowInPlaceAttention


__all__ = ["CausalLMOutput", "GPTConfig", "TinyGPT"]
