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

from arg_checks import check_instance, check_int, check_str


@dataclass(frozen=True)
class PrefixCacheNamespace:
    """Which model's K/V an entry holds, and which logical cache it belongs to."""

    model_id: str
    cache_id: str

    def __post_init__(self) -> None:
        check_str("model_id", self.model_id, allow_empty=False)
        check_str("cache_id", self.cache_id, allow_empty=False)


# (namespace, absolute start position, exact prefix tokens)
PrefixKey = tuple[PrefixCacheNamespace, int, tuple[int, ...]]


INT64_MAX = 2**63 - 1


def check_namespace(namespace: object) -> PrefixCacheNamespace:
    return check_instance("namespace", namespace, PrefixCacheNamespace)


def check_count(value: object, name: str, *, minimum: int, maximum: int = INT64_MAX) -> int:
    """An int (not a bool) in ``[minimum, maximum]``, int64 at most."""
    return check_int(name, value, minimum=minimum, maximum=maximum)


def check_start(start_position: object, token_count: int) -> int:
    """A non-negative int whose prompt's last position still fits in int64."""
    return check_count(
        start_position, "start_position", minimum=0, maximum=INT64_MAX - max(token_count - 1, 0)
    )


def token_tuple(tokens: object, name: str = "tokens") -> tuple[int, ...]:
    """A ``[1, T]`` integer tensor or a flat sequence of ints, as a hashable tuple.

    Ids must be int64 values >= 0 (the vocabulary is the model's to check).
    """
    if isinstance(tokens, Tensor):
        if tokens.dim() != 2 or tokens.shape[0] != 1:
            raise ValueError(f"{name} must be a [1, T] tensor, got shape {tuple(tokens.shape)}")
        if tokens.dtype.is_floating_point or tokens.dtype.is_complex or tokens.dtype == torch.bool:
            raise ValueError(f"{name} must hold integer ids, got dtype {tokens.dtype}")
        if tokens.device.type == "meta":
            raise ValueError(f"{name} is a meta tensor: it holds no ids")
        ids = [int(token) for token in tokens[0].tolist()]
    elif isinstance(tokens, Sequence) and not isinstance(tokens, str | bytes):
        ids = [_token_id(token, index, name) for index, token in enumerate(tokens)]
    else:
        raise TypeError(
            f"{name} must be a [1, T] tensor or a sequence of ints, got {type(tokens).__name__}"
        )
    for index, token in enumerate(ids):
        if not 0 <= token <= INT64_MAX:
            raise ValueError(f"{name}[{index}] must be a non-negative int64 id, got {token}")
    return tuple(ids)


def _token_id(token: object, index: int, name: str) -> int:
    if isinstance(token, bool):
        raise TypeError(f"{name}[{index}] is a bool, not a token id")
    try:
        return operator.index(token)  # type: ignore[arg-type]
    except TypeError:
        raise TypeError(f"{name}[{index}] must be an int, got {type(token).__name__}") from None
    except RuntimeError as error:  # e.g. a 0-d meta tensor has no value to read
        raise ValueError(f"{name}[{index}] has no readable id value: {error}") from None
