"""RoPE rotates adjacent channel pairs (2i, 2i + 1), not M02's split halves (i, i + D/2)."""

from __future__ import annotations

import torch

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "CACHE_AWARE_MODERN_MODULE"
EXPECTED_OWNER = "m03_logits"
CLAUSE = "M03.4"


def interleaved_rotary(x, cos, sin):
    half = x.shape[-1] // 2
    c, s = cos[..., :half], sin[..., :half]  # one angle per pair
    even, odd = x[..., 0::2], x[..., 1::2]
    # mistake: GPT-J / Meta-checkpoint pairing on Hugging Face-layout weights
    return torch.stack((even * c - odd * s, odd * c + even * s), dim=-1).flatten(-2)


advanced = mutated_module("cache_aware_lm.advanced", rebind={"apply_rotary": interleaved_rotary})
globals().update(export_with("cache_aware_lm.advanced", advanced))
