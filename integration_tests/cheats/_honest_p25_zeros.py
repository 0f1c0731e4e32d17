"""The honest twin of the zero-valued P25 cheat: what zeros earn without any trick."""

import torch


def top_k_moe(x, router_logits, experts, k, capacity):
    return torch.zeros_like(x), torch.zeros(len(experts), dtype=torch.int64)
