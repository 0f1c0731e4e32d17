"""PT07 rotary cache buffer policy (transfer case; owner M02).

RotaryCache(head_dim, base=10000.0) owns the RoPE tables of one attention stack:

    cos[p, i] = cos(p * base ** (-2i / head_dim)),  sin[p, i] = sin(...)   0 <= i < head_dim/2

The tables are derived state: two registered buffers `cos` and `sin` [capacity, head_dim/2],
nonpersistent (never in `state_dict()`, so a checkpoint holds no copy of them) that follow
`.to()`. They grow lazily: `forward(like, seq_len)` returns the first seq_len rows, in
like's dtype and on like's device. A request that fits returns views of the buffers (no new
memory); one past the capacity rebuilds them with exactly seq_len rows, so the capacity
only grows; a request in another dtype or on another device rebuilds them there (keeping
the capacity). Angles are computed in float64 whatever the compute dtype (p * freq in
bf16 loses the position past a few hundred), then rounded once.

Shapes: like any tensor (only its dtype and device are read); seq_len an int >= 0
-> (cos, sin), each [seq_len, head_dim // 2].
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from ._describe import described


class RotaryCache(nn.Module):
    cos: Tensor
    sin: Tensor

    def __init__(self, head_dim: int, base: float = 10000.0) -> None:
        super().__init__()
        if isinstance(head_dim, bool) or not isinstance(head_dim, int):
            raise ValueError(f"head_dim must be an int, got {described(head_dim)}")
        if head_dim <= 0 or head_dim % 2:
            raise ValueError(f"head_dim must be a positive even number, got {head_dim}")
        if not base > 1.0:
            raise ValueError(f"base must be a number above 1, got {base}")
        self.head_dim, self.base = head_dim, float(base)
        empty = torch.empty(0, head_dim // 2)
        self.register_buffer("cos", empty, persistent=False)
        self.register_buffer("sin", empty.clone(), persistent=False)

    @property
    def capacity(self) -> int:
        return int(self.cos.shape[0])

    def forward(self, like: Tensor, seq_len: int) -> tuple[Tensor, Tensor]:
        """(cos, sin) [seq_len, head_dim // 2] in like's dtype and device."""
        _check(like, seq_len)
        moved = self.cos.dtype != like.dtype or self.cos.device != like.device
        if moved or seq_len > self.capacity:
            self._rebuild(max(seq_len, self.capacity), like.dtype, like.device)
        return self.cos[:seq_len], self.sin[:seq_len]

    def _rebuild(self, length: int, dtype: torch.dtype, device: torch.device) -> None:
        """Rebind both buffers to new tables (assigning a registered name keeps it a buffer)."""
        exponents = torch.arange(0, self.head_dim, 2, device=device).double() / self.head_dim
        freqs = self.base**-exponents  # [head_dim / 2], float64
        angles = torch.outer(torch.arange(length, device=device).double(), freqs)
        self.cos = angles.cos().to(dtype)
        self.sin = angles.sin().to(dtype)


def _check(like: Tensor, seq_len: int) -> None:
    if not isinstance(like, Tensor) or not like.is_floating_point():
        raise ValueError(f"like must be a floating tensor, got {described(like)}")
    if isinstance(seq_len, bool) or not isinstance(seq_len, int):
        raise ValueError(f"seq_len must be an int, got {described(seq_len)}")
    if seq_len < 0:
        raise ValueError(f"seq_len must be >= 0, got {seq_len}")


__all__ = ["RotaryCache"]
