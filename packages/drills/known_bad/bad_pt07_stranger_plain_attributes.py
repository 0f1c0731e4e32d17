"""A stranger's cache that keeps the tables as plain tensor attributes: nothing is registered,
so .to() leaves them where they were and named_buffers() never lists them."""

import torch
from torch import nn

VARIABLE = "DRILL_PT07_MODULE"
EXPECTED_OWNER = "pt07"


class RotaryCache(nn.Module):
    def __init__(self, head_dim, base=10000.0):
        super().__init__()
        self.head_dim, self.base = head_dim, base
        self.__dict__["cos"] = torch.zeros(0, head_dim // 2)
        self.__dict__["sin"] = torch.zeros(0, head_dim // 2)

    @property
    def capacity(self):
        return self.cos.shape[0]

    def forward(self, like, seq_len):
        stale = self.cos.dtype != like.dtype or self.cos.device != like.device
        if stale or seq_len > self.capacity:
            size = max(seq_len, self.capacity)
            half = torch.arange(self.head_dim // 2, dtype=torch.float64, device=like.device)
            freqs = self.base ** (-2.0 * half / self.head_dim)
            angles = torch.arange(size, dtype=torch.float64, device=like.device)[:, None] * freqs
            self.__dict__["cos"] = angles.cos().to(like.dtype)
            self.__dict__["sin"] = angles.sin().to(like.dtype)
        return self.cos[:seq_len], self.sin[:seq_len]
