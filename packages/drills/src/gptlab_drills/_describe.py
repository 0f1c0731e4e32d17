"""What every drill's error message says about a rejected value (written once)."""

from __future__ import annotations

from torch import Tensor


def described(value: object) -> str:
    """`(2, 3) float32` for a tensor, else the value's type name: what "got ..." reports."""
    if isinstance(value, Tensor):
        return f"{tuple(value.shape)} {str(value.dtype).removeprefix('torch.')}"
    return type(value).__name__
