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


def check_request_id(name: str, value: object) -> Hashable:
    if isinstance(value, Tensor) or not isinstance(value, Hashable):
        raise ValueError(f"{name} must be hashable (a str or int), got {type(value).__name__}")
    return value


def token_list(name: str, tokens: object) -> list[int]:
    """A ``[T]`` or ``[1, T]`` integer tensor, or a flat sequence of ints, as a list (T >= 1)."""
    if isinstance(tokens, Tensor):
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
