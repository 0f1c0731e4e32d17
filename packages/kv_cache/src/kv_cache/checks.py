"""Boundary checks shared by the slot write and the request cache.

Every check here reads tensor *metadata* only (shape, dtype, device): no kernel,
no host sync. The few checks that must read values (slot ranges, positions,
lengths) live beside the code that needs them and cost one host sync each call.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

LayerKV = tuple[Tensor, Tensor]
PastKeyValues = tuple[LayerKV, ...]


def check_positive_int(name: str, value: object) -> int:
    # bool is an int subclass; True heads is a bug, not a one.
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"{name} must be a positive int, got {value!r}")
    return value


def check_tensor(
    name: str,
    value: object,
    *,
    shape: Sequence[int | None],
    dtype: torch.dtype,
    device: torch.device,
) -> Tensor:
    """`value` is a tensor of this rank, shape (None = any size), dtype and device."""
    if not isinstance(value, Tensor):
        raise ValueError(f"{name} must be a tensor, got {type(value).__name__}")
    if value.dim() != len(shape) or any(
        want is not None and got != want for got, want in zip(value.shape, shape, strict=True)
    ):
        wanted = ", ".join("*" if size is None else str(size) for size in shape)
        raise ValueError(f"{name} must have shape [{wanted}], got {list(value.shape)}")
    if value.dtype != dtype:
        raise ValueError(f"{name} must have dtype {dtype}, got {value.dtype}")
    if value.device != device:
        raise ValueError(f"{name} must be on device {device}, got {value.device}")
    return value


def check_layers(name: str, past_key_values: object, layer_count: int) -> Sequence[LayerKV]:
    """A sequence of exactly `layer_count` (key, value) pairs (contents unchecked)."""
    if not isinstance(past_key_values, Sequence):
        raise ValueError(f"{name} must be a sequence of (key, value) pairs")
    if len(past_key_values) != layer_count:
        raise ValueError(f"{name} has {len(past_key_values)} layers, expected {layer_count}")
    for index, pair in enumerate(past_key_values):
        if not isinstance(pair, Sequence) or len(pair) != 2:
            raise ValueError(f"{name}[{index}] must be a (key, value) pair")
    return past_key_values
