"""Position offset ignored after a cache: new tokens always embed positions 0..T-1."""

from __future__ import annotations

from torch import Tensor

import tinygpt
from tinygpt import CausalLMOutput, GPTConfig

VARIABLE = "TINY_GPT_MODULE"
EXPECTED_OWNER = "tokenwise_cache"


class TinyGPT(tinygpt.TinyGPT):
    def embed(self, input_ids: Tensor, past_length: int) -> Tensor:
        return super().embed(input_ids, 0)


__all__ = ["CausalLMOutput", "GPTConfig", "TinyGPT"]
