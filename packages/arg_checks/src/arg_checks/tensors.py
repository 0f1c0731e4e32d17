"""Tensor arguments and devices, read from metadata only (no kernel, no host sync)."""

from __future__ import annotations

import os
from collections.abc import Sequence

import torch
from torch import Tensor

from .errors import ArgumentTypeError, type_name


def check_tensor(
    name: str,
    value: object,
    *,
    shape: Sequence[int | None],
    dtype: torch.dtype,
    device: torch.device,
) -> Tensor:
    """A tensor of this rank and shape (None: any size), dtype and device."""
    if not isinstance(value, Tensor):
        raise ArgumentTypeError(f"{name} must be a tensor, got {type_name(value)}")
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


def check_device(name: str, device: object) -> torch.device:
    """A real device of this machine: the CPU or a present accelerator (never ``meta``,
    which holds no data to write)."""
    if not isinstance(device, str | torch.device):
        raise ArgumentTypeError(f"{name} must be a torch.device or str, got {type_name(device)}")
    try:
        parsed = torch.device(device)
    except RuntimeError as error:
        raise ValueError(f"{name} {device!r} is not a device: {error}") from None
    if parsed.type == "meta":
        raise ValueError(f"{name} 'meta' holds no data: K/V storage needs a real device")
    if parsed.type == "cpu":
        return parsed
    accelerator = torch.accelerator.current_accelerator(check_available=True)
    on_accelerator = accelerator is not None and parsed.type == accelerator.type
    if on_accelerator and (parsed.index or 0) < torch.accelerator.device_count():
        return parsed
    raise ValueError(f"{name} {device!r} is not available on this machine")


def device_memory(device: torch.device) -> int | None:
    """Total bytes of ``device`` when torch or the OS can tell (else None): what no single
    cache or pool can exceed, checked before anything is allocated."""
    if device.type == "cpu":
        try:
            return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        except (ValueError, OSError, AttributeError):  # not every OS names these
            return None
    if device.type == "cuda":
        return int(torch.cuda.get_device_properties(device).total_memory)
    return None
