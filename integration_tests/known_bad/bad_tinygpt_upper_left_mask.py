"""Upper-left triangle after a cache: tril(T, P+T) for a chunk, no mask for a single token.

Tokenwise decode still works (a single query may see every key); a multi-token chunk
after a cache hides valid cached keys from its later queries.
"""

from __future__ import annotations

import torch
from torch import Tensor

import tinygpt
from gptlab_testkit.mutants import export_with, retyped_class
from tinygpt.attention import CausalSelfAttention

VARIABLE = "TINY_GPT_MODULE"
EXPECTED_OWNER = "rectangular_mask"


class UpperLeftMaskAttention(CausalSelfAttention):
    @staticmethod
    def causal_mask(past_length: int, query_length: int, device: torch.device) -> Tensor:
        shape = (query_length, past_length + query_length)
        if query_length == 1:
            return torch.ones(shape, dtype=torch.bool, device=device)
        return torch.ones(shape, dtype=torch.bool, device=device).tril()  # M[i, j] = j <= i


TinyGPT = retyped_class(tinygpt.TinyGPT, {CausalSelfAttention: UpperLeftMaskAttention})
globals().update(export_with("tinygpt", TinyGPT=TinyGPT))
