"""The next student's wrong submission: it must fail every test."""

import torch


def decode_attention(q, k_cache, v_cache, lengths):
    return torch.zeros_like(q)
