"""A stranger's PT07 from the kit's row alone: nonpersistent cos/sin buffers re-registered on
every rebuild, angles in float32, the capacity doubled past a request (never exactly it),
tables returned as copies; nothing validated."""

import torch
from torch import nn

VARIABLE = "DRILL_PT07_MODULE"


class RotaryCache(nn.Module):
    def __init__(self, head_dim, base=10000.0):
        super().__init__()
        self.head_dim = head_dim
        self.base = base
        self.register_buffer("cos", torch.zeros(0, head_dim // 2), persistent=False)
        self.register_buffer("sin", torch.zeros(0, head_dim // 2), persistent=False)

    @property
    def capacity(self):
        return self.cos.shape[0]

    def forward(self, like, seq_len):
        stale = self.cos.dtype != like.dtype or self.cos.device != like.device
        if stale or seq_len > self.capacity:
            size = self.capacity
            while size < seq_len:
                size = max(1, 2 * size)
            inv = 1.0 / self.base ** (
                torch.arange(0, self.head_dim, 2, device=like.device).float() / self.head_dim
            )
            angles = torch.outer(torch.arange(size, device=like.device).float(), inv)
            self.register_buffer("cos", angles.cos().to(like.dtype), persistent=False)
            self.register_buffer("sin", angles.sin().to(like.dtype), persistent=False)
        return self.cos[:seq_len].clone(), self.sin[:seq_len].clone()
