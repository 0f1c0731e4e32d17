"""Boundary checks: every public call is validated before any state changes.

The messages name the argument. The checks every package shares (ints, tensors,
devices, instances) are `arg_checks`'; those here are the paged cache's own (request
ids, token ids). Metadata checks (shape, dtype, device) run no kernel; the value
checks read each small tensor back to the host once per call.
"""

from __future__ import annotations

import operator
from collections.abc import Hashable, Sequence

import torch
from torch import Tensor


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
