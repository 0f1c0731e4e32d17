"""Heads split and merged by reshape alone: [B, T, C] is read as [B, H, T, D], no transpose."""

from __future__ import annotations

from torch import Tensor

import tinygpt
from gptlab_testkit.mutants import export_with, retyped_class
from tinygpt.attention import CausalSelfAttention

VARIABLE = "TINY_GPT_MODULE"
EXPECTED_OWNER = "head_split"


class ReshapeOnlyAttention(CausalSelfAttention):
    def split_heads(self, qkv: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        B, T, _ = qkv.shape
        q, k, v = qkv.chunk(3, dim=-1)  # each [B, T, C]
        shape = (B, self.n_heads, T, self.head_dim)
        return q.reshape(shape), k.reshape(shape), v.reshape(shape)

    def merge_heads(self, y: Tensor) -> Tensor:
        B, H, T, D = y.shape
        return y.reshape(B, T, H * D)


TinyGPT = retyped_class(tinygpt.TinyGPT, {CausalSelfAttention: ReshapeOnlyAttention})
globals().update(export_with("tinygpt", TinyGPT=TinyGPT))
