"""A stranger's cache that rebuilds whenever the length changes: a short request after a long
one throws the long tables away (the capacity shrinks, and grows back at the next long one)."""

import torch
from torch import nn

VARIABLE = "DRILL_PT07_MODULE"
EXPECTED_OWNER = "pt07"


class RotaryCache(nn.Module):
    def __init__(self, head_dim, base=10000.0):
        super().__init__()
        self.head_dim, self.base = head_dim, base
        self.register_buffer("cos", torch.zeros(0, head_dim // 2), persistent=False)
        self.register_buffer("sin", torch.zeros(0, head_dim // 2), persistent=False)

    @property
    def capacity(self):
        return self.cos.shape[0]

    def forward(self, like, seq_len):
        stale = self.cos.dtype != like.dtype or self.cos.device != like.device
        if stale or seq_len != self.capacity:
            half = torch.arange(self.head_dim // 2, dtype=torch.float64, device=like.device)
            freqs = self.base ** (-2.0 * half / self.head_dim)
            positions = torch.arange(seq_len, dtype=torch.float64, device=like.device)
            angles = positions[:, None] * freqs
            self.cos = angles.cos().to(like.dtype)
            self.sin = angles.sin().to(like.dtype)
        return self.cos, self.sin
