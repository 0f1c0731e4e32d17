"""Boundary checks: every public call is validated before any state changes.

The messages name the argument. Metadata checks (shape, dtype, device) run no
kernel; the value checks read each small tensor back to the host once per call.
"""

from __future__ import annotations

import operator
from collections.abc import Hashable, Sequence

import torch
from torch import Tensor

from .hashing import PagedNamespace


def check_positive_int(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"{name} must be a positive int, got {value!r}")
    return value


def check_non_negative_int(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name} must be a non-negative int, got {value!r}")
    return value


def check_namespace(value: object) -> PagedNamespace:
    if not isinstance(value, PagedNamespace):
        raise ValueError(f"namespace must be a PagedNamespace, got {type(value).__name__}")
    return value


def _is_id_part(value: object) -> bool:
    return isinstance(value, str | int) and not isinstance(value, bool)


def check_request_id(name: str, value: object) -> Hashable:
    """A str or an int (not a bool), or a tuple of them (the scheduler's own ids).

    A float id would make 1.0 and 1 one request, None reads as "no request": refused.
    """
    if _is_id_part(value) or (
        isinstance(value, tuple) and value and all(_is_id_part(part) for part in value)
    ):
        return value
    raise ValueError(
        f"{name} must be a str or an int (or a tuple of them), got {type(value).__name__} {value!r}"
    )


def check_device(device: object) -> torch.device:
    """A torch.device (or its name) that exists here and can hold K/V (not ``meta``)."""
    if not isinstance(device, torch.device | str):
        raise ValueError(f"device must be a torch.device or a str, got {type(device).__name__}")
    try:
        resolved = torch.device(device)
    except RuntimeError:
        raise ValueError(f"device {device!r} is not a torch device name") from None
    if resolved.type == "meta":
        raise ValueError("device 'meta' holds no data: a K/V pool needs a real device")
    try:
        torch.empty(0, device=resolved)  # a name torch parses may still be absent here
    except (RuntimeError, AssertionError):  # a torch without CUDA asserts
        raise ValueError(f"device {device!r} is not available on this machine") from None
    return resolved


def token_list(name: str, tokens: object) -> list[int]:
    """A ``[T]`` or ``[1, T]`` integer tensor, or a flat sequence of ints, as a list (T >= 1)."""
    if isinstance(tokens, Tensor):
        if tokens.device.type == "meta":  # no values to read (torch: "Cannot copy out of meta")
            raise ValueError(f"{name} is on device meta: it holds no token values")
        if tokens.dim() == 2 and tokens.shape[0] == 1:
            tokens = tokens[0]
        if tokens.dim() != 1 or tokens.dtype.is_floating_point or tokens.dtype == torch.bool:
            raise ValueError(f"{name} must be a [T] or [1, T] integer tensor")
        ids = [int(token) for token in tokens.tolist()]
    elif isinstance(tokens, Sequence) and not isinstance(tokens, str | bytes):
        ids = []
        for index, token in enumerate(tokens):
            if isinstance(token, bool):
                raise ValueError(f"{name}[{index}] is a bool, not a token id")
            try:
                ids.append(operator.index(token))
            except TypeError:
                raise ValueError(f"{name}[{index}] must be an int") from None
    else:
        raise ValueError(f"{name} must be a tensor or a sequence of ints")
    if not ids:
        raise ValueError(f"{name} must hold at least one token")
    if min(ids) < 0:
        raise ValueError(f"{name} must be non-negative token ids")
    return ids


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
