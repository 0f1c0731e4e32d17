"""In-place write into the caller's cache: it is treated as a rolling buffer of the newest S tokens.

Outputs are computed correctly first; only the caller's tensors are overwritten afterwards.
"""

from __future__ import annotations

from torch import Tensor

import tinygpt
from tinygpt import CausalLMOutput, GPTConfig, LayerKV
from tinygpt.attention import CausalSelfAttention

VARIABLE = "TINY_GPT_MODULE"
EXPECTED_OWNER = "cache_immutability"


class RollingBufferAttention(CausalSelfAttention):
    def forward(
        self, hidden_states: Tensor, past_key_value: LayerKV | None = None
    ) -> tuple[Tensor, LayerKV]:
        output, (key, value) = super().forward(hidden_states, past_key_value)
        if past_key_value is not None:
            past_key, past_value = past_key_value
            S = past_key.size(2)
            past_key.copy_(key[:, :, -S:])
            past_value.copy_(value[:, :, -S:])
        return output, (key, value)


class TinyGPT(tinygpt.TinyGPT):
    def __init__(self, config: GPTConfig) -> None:
        super().__init__(config)
        for block in self.blocks:
            block.attention.__class__ = RollingBufferAttention


__all__ = ["CausalLMOutput", "GPTConfig", "TinyGPT"]
