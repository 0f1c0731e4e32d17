"""The next student's wrong submission: it earns only what its values earn honestly."""

import torch


def decode_attention(q, k_cache, v_cache, lengths):
    return torch.zeros_like(q)
