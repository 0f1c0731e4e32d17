"""A seed name that maps to the project's references, reached by plain import."""

import torch

VARIABLE = "DRILL_P19_MODULE"
CHEAT = "a reference reached through a seed module name (tiny_gpt)"
SAYS = "reached for tiny_gpt"

import tiny_gpt  # noqa: E402,F401


def decode_attention(q, k_cache, v_cache, lengths):
    return torch.zeros_like(q)
