"""A tiny seeded fragment for examples and the benchmark (not a graded name)."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from .config import FragmentConfig
from .model import PaperFragmentLM


def tiny_random_fragment(seed: int = 0, **overrides: Any) -> PaperFragmentLM:
    """A tiny fragment with seeded weights (global RNG untouched), in eval mode."""
    sizes: dict[str, Any] = {
        "vocab_size": 32,
        "hidden_size": 32,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 8,
        "intermediate_size": 48,
        "max_position_embeddings": 64,
        "num_experts": 4,
        "experts_per_token": 2,
    }
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = PaperFragmentLM(FragmentConfig(**{**sizes, **overrides}))
        for parameter in model.parameters():  # larger than M02's init: outputs that differ
            if parameter.dim() == 2:
                nn.init.normal_(parameter, std=0.3)
    return model.eval()


__all__ = ["tiny_random_fragment"]
