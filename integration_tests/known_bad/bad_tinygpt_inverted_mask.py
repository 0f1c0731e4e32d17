"""Inverted mask polarity: True is taken to mean 'blocked', so queries attend to the future."""

from __future__ import annotations

import torch
from torch import Tensor

import tinygpt
from gptlab_testkit.mutants import export_with, retyped_class
from tinygpt.attention import CausalSelfAttention

VARIABLE = "TINY_GPT_MODULE"
EXPECTED_OWNER = "mask_polarity"


class InvertedMaskAttention(CausalSelfAttention):
    @staticmethod
    def causal_mask(past_length: int, query_length: int, device: torch.device) -> Tensor:
        # The "positions to hide" (strictly above the diagonal), handed to SDPA as-is.
        query_positions = torch.arange(query_length, device=device) + past_length
        key_positions = torch.arange(past_length + query_length, device=device)
        return key_positions[None, :] > query_positions[:, None]


TinyGPT = retyped_class(tinygpt.TinyGPT, {CausalSelfAttention: InvertedMaskAttention})
globals().update(export_with("tinygpt", TinyGPT=TinyGPT))
