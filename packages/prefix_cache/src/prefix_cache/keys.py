"""What a prefix entry is keyed by: namespace, absolute start position, exact tokens.

Two prompts share an entry only when all three agree. The namespace keeps models
(and independent caches of one model) apart; the start position matters because
K/V carry position information (learned or rotary), so the same tokens cached at
another origin are different numbers.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor


@dataclass(frozen=True)
class PrefixCacheNamespace:
    """Which model's K/V an entry holds, and which logical cache it belongs to."""

    model_id: str
    cache_id: str


# (namespace, absolute start position, exact prefix tokens)
PrefixKey = tuple[PrefixCacheNamespace, int, tuple[int, ...]]


def check_namespace(namespace: object) -> PrefixCacheNamespace:
    if not isinstance(namespace, PrefixCacheNamespace):
        raise ValueError(
            f"namespace must be a PrefixCacheNamespace, got {type(namespace).__name__}"
        )
    return namespace


def check_count(value: object, name: str, *, minimum: int) -> int:
    """An int (not a bool) that is at least ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be an int, got {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return value


def token_tuple(tokens: Tensor | Sequence[int]) -> tuple[int, ...]:
    """A ``[1, T]`` integer tensor or a flat sequence of ints, as a hashable tuple."""
    if isinstance(tokens, Tensor):
        if tokens.dim() != 2 or tokens.shape[0] != 1:
            raise ValueError(f"tokens must be a [1, T] tensor, got shape {tuple(tokens.shape)}")
        if tokens.dtype.is_floating_point or tokens.dtype.is_complex or tokens.dtype == torch.bool:
            raise ValueError(f"tokens must hold integer ids, got dtype {tokens.dtype}")
        ids = [int(token) for token in tokens[0].tolist()]
    elif isinstance(tokens, Sequence) and not isinstance(tokens, str | bytes):
        ids = [_token_id(token, index) for index, token in enumerate(tokens)]
    else:
        raise ValueError(
            f"tokens must be a [1, T] tensor or a sequence of ints, got {type(tokens).__name__}"
        )
    if any(token < 0 for token in ids):
        raise ValueError("tokens must be non-negative ids")
    return tuple(ids)


def _token_id(token: object, index: int) -> int:
    if isinstance(token, bool):
        raise ValueError(f"tokens[{index}] is a bool, not a token id")
    try:
        return operator.index(token)  # type: ignore[arg-type]
    except TypeError:
        raise ValueError(f"tokens[{index}] must be an int, got {type(token).__name__}") from None
