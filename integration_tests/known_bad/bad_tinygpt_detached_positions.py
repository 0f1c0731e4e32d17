"""Position embeddings detached from the graph: position_embedding never receives a gradient."""

from __future__ import annotations

import torch
from torch import Tensor

import tinygpt
from tinygpt import CausalLMOutput, GPTConfig

VARIABLE = "TINY_GPT_MODULE"
EXPECTED_OWNER = "gradients"


class TinyGPT(tinygpt.TinyGPT):
    def embed(self, input_ids: Tensor, past_length: int) -> Tensor:
        T = input_ids.size(1)
        positions = torch.arange(past_length, past_length + T, device=input_ids.device)
        x = self.token_embedding(input_ids) + self.position_embedding(positions).detach()
        embedded: Tensor = self.embedding_dropout(x)
        return embedded


__all__ = ["CausalLMOutput", "GPTConfig", "TinyGPT"]
