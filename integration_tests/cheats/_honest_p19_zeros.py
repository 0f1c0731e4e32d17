"""The honest twin of the zero-valued cheats: what zeros earn without any trick."""

import torch


def decode_attention(q, k_cache, v_cache, lengths):
    return torch.zeros_like(q)
