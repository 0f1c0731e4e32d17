"""What the kernels' suites share: where tensors live, seeded values, the ledger check."""

from __future__ import annotations

import os

import torch
from torch import Tensor

from . import LEDGER_FIELDS


def device() -> torch.device:
    """CPU under Triton's interpreter; CUDA when kernels run compiled."""
    interpreted = os.environ.get("TRITON_INTERPRET") == "1" or not torch.cuda.is_available()
    return torch.device("cpu" if interpreted else "cuda")


def seeded(
    *shape: int, seed: int, dtype: torch.dtype = torch.float32, scale: float = 1.0
) -> Tensor:
    generator = torch.Generator().manual_seed(seed)
    values = torch.randn(*shape, generator=generator) * scale
    return values.to(dtype=dtype, device=device())


def ledger_gaps(ledger: object) -> list[str]:
    """The ledger fields an attempt's LEDGER leaves missing or empty (all of them if none)."""
    if not isinstance(ledger, dict):
        return list(LEDGER_FIELDS)
    return [f for f in LEDGER_FIELDS if not str(ledger.get(f, "")).strip()]


__all__ = ["device", "ledger_gaps", "seeded"]
