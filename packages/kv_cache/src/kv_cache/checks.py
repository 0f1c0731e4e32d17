"""Boundary checks shared by the slot write and the request cache.

A wrong kind of object is a TypeError, a wrong value, shape, dtype or device a
ValueError; every message names the argument. The checks every package shares (ints,
tensors, devices) are `arg_checks`'; those here are this cache's own. Every check
reads tensor *metadata* only (shape, dtype, device, data pointers): no kernel, no host
sync. The few checks that must read values (slot ranges, positions, lengths) live
beside the code that needs them and cost one host sync each call.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from arg_checks import device_memory

LayerKV = tuple[Tensor, Tensor]
PastKeyValues = tuple[LayerKV, ...]

INT64_MAX = 2**63 - 1


def check_layers(name: str, past_key_values: object, layer_count: int) -> Sequence[LayerKV]:
    """A sequence of exactly `layer_count` (key, value) pairs (contents unchecked)."""
    if not _is_sequence(past_key_values):
        raise TypeError(
            f"{name} must be a sequence of (key, value) pairs, got {type(past_key_values).__name__}"
        )
    assert isinstance(past_key_values, Sequence)
    if len(past_key_values) != layer_count:
        raise ValueError(f"{name} has {len(past_key_values)} layers, expected {layer_count}")
    for index, pair in enumerate(past_key_values):
        if not _is_sequence(pair):
            raise TypeError(
                f"{name}[{index}] must be a (key, value) pair, got {type(pair).__name__}"
            )
        if len(pair) != 2:
            raise ValueError(f"{name}[{index}] must be a (key, value) pair, got {len(pair)} items")
    return past_key_values


def _is_sequence(value: object) -> bool:
    return isinstance(value, Sequence) and not isinstance(value, str | bytes)


# ---- memory: aliasing and sizes --------------------------------------------------------


def memory_span(tensor: Tensor) -> tuple[int, int]:
    """The byte range `[first, end)` a tensor's elements occupy (empty for no elements)."""
    if tensor.numel() == 0:
        return (0, 0)
    extent = 1 + sum(
        (size - 1) * abs(stride) for size, stride in zip(tensor.shape, tensor.stride(), strict=True)
    )
    first = tensor.data_ptr()
    return (first, first + extent * tensor.element_size())


def overlaps(first: tuple[int, int], second: tuple[int, int]) -> bool:
    return first[0] < second[1] and second[0] < first[1]


def check_writable(name: str, tensor: Tensor) -> None:
    """An in-place destination: every element its own memory, writable in this mode."""
    if any(
        stride == 0 and size > 1 for size, stride in zip(tensor.shape, tensor.stride(), strict=True)
    ):
        raise ValueError(f"{name} is an expanded view (stride 0): its slots share memory")
    if tensor.is_inference() and not torch.is_inference_mode_enabled():
        raise ValueError(f"{name} is an inference tensor: write it inside torch.inference_mode()")
    if tensor.requires_grad and tensor.is_leaf and torch.is_grad_enabled():
        raise ValueError(f"{name} is a leaf that requires grad and cannot be written in place")


def check_fits(sizes: dict[str, int], dtype: torch.dtype, device: torch.device) -> None:
    """Refuse, before allocating, a cache the device could never hold (names every size)."""
    elements = 2  # a key and a value
    for value in sizes.values():
        elements *= value
    needed = elements * dtype.itemsize
    available = device_memory(device)
    per_tensor = elements // (2 * sizes["layer_count"])
    if per_tensor > INT64_MAX or (available is not None and needed > available):
        described = ", ".join(f"{name}={value}" for name, value in sizes.items())
        raise ValueError(
            f"a cache of {described} needs {needed} bytes of {dtype}, "
            f"more than {device} holds ({available} bytes)"
        )
